package shop

import (
	_ "embed"
	"fmt"

	"tolokaforge.io/operator/examples/shop/internal/pyjson"
)

// toolError is a domain failure with the exact message of shop-domain.md; the state
// is left as it was.
type toolError string

func (e toolError) Error() string { return string(e) }

func errorf(format string, args ...any) error { return toolError(fmt.Sprintf(format, args...)) }

// toolFunc runs one tool against the state (the caller holds the lock). It must
// validate everything before mutating anything, so that an error leaves the state
// unchanged. The result is rendered as json.dumps would.
type toolFunc func(st *State, args *pyjson.Object) (any, error)

var toolFuncs = map[string]toolFunc{
	"list_products":   listProducts,
	"get_customer":    getCustomer,
	"place_order":     placeOrder,
	"confirm_payment": confirmPayment,
}

func listProducts(st *State, _ *pyjson.Object) (any, error) {
	out := []any{}
	for _, p := range st.rows(tableProducts) {
		stock, _ := p.Get("stock")
		if pyjson.Cmp(stock.(pyjson.Number), pyjson.Int(0)) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

func getCustomer(st *State, args *pyjson.Object) (any, error) {
	id, err := stringArg("get_customer", args, "customer_id", "customer_id")
	if err != nil {
		return nil, err
	}
	c := findByID(st.rows(tableCustomers), id)
	if c == nil {
		return nil, errorf("Customer '%s' not found", id)
	}
	return c, nil
}

// placeOrder follows shop-domain.md: total accumulates round(total + price *
// quantity, 2) over the stored prices, then the order is appended and stocks are
// decremented. Stock is checked against what earlier items of the same order have
// already taken, so repeating a product cannot drive its stock negative.
func placeOrder(st *State, args *pyjson.Object) (any, error) {
	const tool = "place_order"
	customerID, err := stringArg(tool, args, "customer_id", "customer_id")
	if err != nil {
		return nil, err
	}
	lines, err := orderLines(tool, args)
	if err != nil {
		return nil, err
	}
	if findByID(st.rows(tableCustomers), customerID) == nil {
		return nil, errorf("Customer '%s' not found", customerID)
	}
	products := st.rows(tableProducts)
	type stockChange struct {
		product *pyjson.Object
		stock   pyjson.Number
	}
	var changes []stockChange // in first-seen order; one entry per product
	pending := map[*pyjson.Object]int{}
	total := pyjson.Float(0)
	items := make([]any, 0, len(lines))
	for _, l := range lines {
		p := findByID(products, l.productID)
		if p == nil {
			return nil, errorf("Product '%s' not found", l.productID)
		}
		idx, seen := pending[p]
		if !seen {
			s, _ := p.Get("stock")
			idx = len(changes)
			pending[p] = idx
			changes = append(changes, stockChange{product: p, stock: s.(pyjson.Number)})
		}
		if pyjson.Cmp(changes[idx].stock, l.quantity) < 0 {
			return nil, errorf("Insufficient stock for '%s'", l.productID)
		}
		pv, _ := p.Get("price")
		price := pv.(pyjson.Number)
		lineTotal, err := pyjson.Mul(price, l.quantity)
		if err == nil {
			total, err = pyjson.Add(total, lineTotal)
		}
		if err == nil {
			changes[idx].stock, err = pyjson.Sub(changes[idx].stock, l.quantity)
		}
		if err != nil {
			return nil, errorf("Cannot compute the order for '%s': %v", l.productID, err)
		}
		total = pyjson.Round2(total)
		items = append(items, pyjson.NewObject(
			pyjson.Member{Key: "product_id", Value: l.productID},
			pyjson.Member{Key: "quantity", Value: l.quantity},
			pyjson.Member{Key: "unit_price", Value: price},
		))
	}
	order := pyjson.NewObject(
		pyjson.Member{Key: "id", Value: fmt.Sprintf("O-%03d", len(st.rows(tableOrders))+1)},
		pyjson.Member{Key: "customer_id", Value: customerID},
		pyjson.Member{Key: "status", Value: "pending"},
		pyjson.Member{Key: "items", Value: items},
		pyjson.Member{Key: "total", Value: total},
	)
	// Nothing below can fail.
	st.appendRow(tableOrders, order)
	for _, c := range changes {
		c.product.Set("stock", c.stock)
	}
	return order, nil
}

func confirmPayment(st *State, args *pyjson.Object) (any, error) {
	const tool = "confirm_payment"
	orderID, err := stringArg(tool, args, "order_id", "order_id")
	if err != nil {
		return nil, err
	}
	order := findByID(st.rows(tableOrders), orderID)
	if order == nil {
		return nil, errorf("Order '%s' not found", orderID)
	}
	if status, _ := order.Get("status"); status != "pending" {
		return nil, errorf("Order '%s' cannot be paid", orderID)
	}
	cv, _ := order.Get("customer_id")
	customerID := cv.(string)
	customer := findByID(st.rows(tableCustomers), customerID)
	if customer == nil {
		return nil, errorf("Customer '%s' not found", customerID)
	}
	tv, _ := order.Get("total")
	bv, _ := customer.Get("balance")
	total, balance := tv.(pyjson.Number), bv.(pyjson.Number)
	if pyjson.Cmp(balance, total) < 0 {
		return nil, errorf("Insufficient balance for customer '%s'", customerID)
	}
	newBalance, err := pyjson.Sub(balance, total)
	if err != nil {
		return nil, errorf("Cannot compute the balance of customer '%s': %v", customerID, err)
	}
	customer.Set("balance", pyjson.Round2(newBalance))
	order.Set("status", "paid")
	return order, nil
}
