package shop

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"tolokaforge.io/operator/examples/shop/internal/pyjson"
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
func decodeArgs(tool string, raw []byte) (*pyjson.Object, error) {
	if len(raw) == 0 {
		return pyjson.NewObject(), nil
	}
	v, err := pyjson.Decode(raw)
	if err != nil {
		return nil, &argError{tool, "arguments are not valid JSON: " + err.Error()}
	}
	switch t := v.(type) {
	case nil:
		return pyjson.NewObject(), nil
	case *pyjson.Object:
		return t, nil
	}
	return nil, &argError{tool, "arguments must be a JSON object, got " + describe(v)}
}

func stringArg(tool string, obj *pyjson.Object, key, path string) (string, error) {
	v, ok := obj.Get(key)
	if !ok {
		return "", &argError{tool, path + " is required"}
	}
	s, ok := v.(string)
	if !ok {
		return "", &argError{tool, fmt.Sprintf("%s must be a string, got %s", path, describe(v))}
	}
	return s, nil
}

// orderLine is one validated item of place_order.
type orderLine struct {
	productID string
	quantity  pyjson.Number // always an int
}

// orderLines validates place_order's items against the OrderItem schema of
// tools.json: product_id string, quantity integer >= 1, unit_price number >= 0.
// unit_price is checked but not used: the order takes the stored product price.
func orderLines(tool string, args *pyjson.Object) ([]orderLine, error) {
	v, ok := args.Get("items")
	if !ok {
		return nil, &argError{tool, "items is required"}
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, &argError{tool, "items must be an array, got " + describe(v)}
	}
	lines := make([]orderLine, len(arr))
	for i, e := range arr {
		path := "items[" + strconv.Itoa(i) + "]"
		item, ok := e.(*pyjson.Object)
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
		pn, ok := price.(pyjson.Number)
		if !ok || pyjson.Cmp(pn, pyjson.Int(0)) < 0 {
			return nil, &argError{tool, fmt.Sprintf("%s.unit_price must be a number >= 0, got %s", path, describe(price))}
		}
		lines[i] = orderLine{productID: pid, quantity: qty}
	}
	return lines, nil
}

// quantityArg accepts an integer >= 1. An integral float literal (2.0) is taken as
// the int 2, as the Python server's pydantic validation (lax mode) does, so the
// stored quantity is an int either way.
func quantityArg(tool string, item *pyjson.Object, path string) (pyjson.Number, error) {
	v, ok := item.Get("quantity")
	if !ok {
		return pyjson.Number{}, &argError{tool, path + " is required"}
	}
	bad := &argError{tool, fmt.Sprintf("%s must be an integer >= 1, got %s", path, describe(v))}
	n, ok := v.(pyjson.Number)
	if !ok {
		return pyjson.Number{}, bad
	}
	if n.IsFloat() {
		f, _ := n.Float64()
		if f != math.Trunc(f) {
			return pyjson.Number{}, bad
		}
		i, _ := new(big.Float).SetFloat64(f).Int(nil)
		n, _ = pyjson.ParseNumber(i.String())
	}
	if pyjson.Cmp(n, pyjson.Int(1)) < 0 {
		return pyjson.Number{}, bad
	}
	return n, nil
}
