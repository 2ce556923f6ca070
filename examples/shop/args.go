package shop

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"tolokaforge.io/operator/api/canonical"
)

// argError is a tool-argument problem; it is reported as a tool error (IsError) like
// every other tool failure, because the LLM that sent the arguments must see it.
type argError struct {
	tool string
	msg  string
}

func (e *argError) Error() string { return fmt.Sprintf("Invalid arguments for %s: %s", e.tool, e.msg) }

// decodeArgs reads tools/call arguments: absent or null means {}, anything but an
// object is refused.
func decodeArgs(tool string, raw []byte) (canonical.Object, error) {
	if len(raw) == 0 {
		return canonical.NewOrderedObject(), nil
	}
	v, err := parseOrdered(raw)
	if err != nil {
		return canonical.Object{}, &argError{tool, "arguments are not valid JSON: " + err.Error()}
	}
	switch t := v.(type) {
	case canonical.Null:
		return canonical.NewOrderedObject(), nil
	case canonical.Object:
		return t, nil
	}
	return canonical.Object{}, &argError{tool, "arguments must be a JSON object, got " + describe(v)}
}

func stringArg(tool string, obj canonical.Object, key, path string) (string, error) {
	v, ok := obj.Get(key)
	if !ok {
		return "", &argError{tool, path + " is required"}
	}
	s, ok := v.(canonical.String)
	if !ok {
		return "", &argError{tool, fmt.Sprintf("%s must be a string, got %s", path, describe(v))}
	}
	return string(s), nil
}

// orderLine is one validated item of place_order.
type orderLine struct {
	productID string
	quantity  canonical.Int
}

// orderLines validates place_order's items against the OrderItem schema of
// tools.json: product_id string, quantity integer >= 1, unit_price number >= 0.
// unit_price is checked but not used: the order takes the stored product price.
func orderLines(tool string, args canonical.Object) ([]orderLine, error) {
	v, ok := args.Get("items")
	if !ok {
		return nil, &argError{tool, "items is required"}
	}
	arr, ok := v.(canonical.Array)
	if !ok {
		return nil, &argError{tool, "items must be an array, got " + describe(v)}
	}
	lines := make([]orderLine, len(arr))
	for i, e := range arr {
		path := "items[" + strconv.Itoa(i) + "]"
		item, ok := e.(canonical.Object)
		if !ok {
			return nil, &argError{tool, fmt.Sprintf("%s must be an object, got %s", path, describe(e))}
		}
		pid, err := stringArg(tool, item, "product_id", path+".product_id")
		if err != nil {
			return nil, err
		}
		qty, err := quantityArg(tool, item, path+".quantity")
		if err != nil {
			return nil, err
		}
		price, ok := item.Get("unit_price")
		if !ok {
			return nil, &argError{tool, path + ".unit_price is required"}
		}
		if !isNumber(price) || cmpNumbers(price, canonical.NewInt(0)) < 0 {
			return nil, &argError{tool, fmt.Sprintf("%s.unit_price must be a number >= 0, got %s", path, describe(price))}
		}
		lines[i] = orderLine{productID: pid, quantity: qty}
	}
	return lines, nil
}

// quantityArg accepts an integer >= 1. An integral float literal (2.0) is taken as
// the int 2, as the Python server's pydantic validation (lax mode) does, so the
// stored quantity is an int either way.
func quantityArg(tool string, item canonical.Object, path string) (canonical.Int, error) {
	v, ok := item.Get("quantity")
	if !ok {
		return canonical.Int{}, &argError{tool, path + " is required"}
	}
	bad := &argError{tool, fmt.Sprintf("%s must be an integer >= 1, got %s", path, describe(v))}
	var n canonical.Int
	switch t := v.(type) {
	case canonical.Int:
		n = t
	case canonical.Float:
		f := float64(t)
		// Parse never yields NaN or Inf, but a Float built in Go may hold them.
		if math.IsInf(f, 0) || f != math.Trunc(f) {
			return canonical.Int{}, bad
		}
		i, _ := new(big.Float).SetFloat64(f).Int(nil)
		n = canonical.NewBigInt(i)
	default:
		return canonical.Int{}, bad
	}
	if cmpNumbers(n, canonical.NewInt(1)) < 0 {
		return canonical.Int{}, bad
	}
	return n, nil
}
