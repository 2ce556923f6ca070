package shop

import (
	_ "embed"
	"fmt"

	"tolokaforge.io/operator/api/canonical"
)

// toolError is a domain failure with the exact message of shop-domain.md; the state
// is left as it was.
type toolError string

func (e toolError) Error() string { return string(e) }

func errorf(format string, args ...any) error { return toolError(fmt.Sprintf(format, args...)) }

// toolFunc runs one tool against the state (the caller holds the lock). It must
// validate everything before changing anything, so that an error leaves the state
// unchanged. The result is rendered as json.dumps would.
type toolFunc func(st *State, args canonical.Object) (canonical.Value, error)

var toolFuncs = map[string]toolFunc{
	"list_products":   listProducts,
	"get_customer":    getCustomer,
	"place_order":     placeOrder,
	"confirm_payment": confirmPayment,
}

func listProducts(st *State, _ canonical.Object) (canonical.Value, error) {
	out := canonical.Array{}
	for _, p := range st.rows(tableProducts) {
		stock, _ := p.Get("stock")
		if cmpNumbers(stock, canonical.NewInt(0)) > 0 {
			out = append(out, p)
		}
	}
	return out, nil
}

func getCustomer(st *State, args canonical.Object) (canonical.Value, error) {
	id, err := stringArg("get_customer", args, "customer_id", "customer_id")
	if err != nil {
		return nil, err
	}
	customers := st.rows(tableCustomers)
	i := findByID(customers, id)
	if i < 0 {
		return nil, errorf("Customer '%s' not found", id)
	}
	return customers[i], nil
}

// placeOrder follows shop-domain.md: total accumulates round(total + price *
// quantity, 2) over the stored prices, then the order is appended and stocks are
// decremented. Stock is checked against what earlier items of the same order have
// already taken, so repeating a product cannot drive its stock negative.
func placeOrder(st *State, args canonical.Object) (canonical.Value, error) {
	const tool = "place_order"
	customerID, err := stringArg(tool, args, "customer_id", "customer_id")
	if err != nil {
		return nil, err
	}
	lines, err := orderLines(tool, args)
	if err != nil {
		return nil, err
	}
	if findByID(st.rows(tableCustomers), customerID) < 0 {
		return nil, errorf("Customer '%s' not found", customerID)
	}
	products := st.rows(tableProducts)
	type stockChange struct {
		row   int // index in products
		stock canonical.Value
	}
	var changes []stockChange // in first-seen order; one entry per product
	pending := map[int]int{}  // product row -> index in changes
	var total canonical.Value = canonical.Float(0)
	items := make(canonical.Array, 0, len(lines))
	for _, l := range lines {
		row := findByID(products, l.productID)
		if row < 0 {
			return nil, errorf("Product '%s' not found", l.productID)
		}
		p := products[row]
		idx, seen := pending[row]
		if !seen {
			s, _ := p.Get("stock")
			idx = len(changes)
			pending[row] = idx
			changes = append(changes, stockChange{row: row, stock: s})
		}
		if cmpNumbers(changes[idx].stock, l.quantity) < 0 {
			return nil, errorf("Insufficient stock for '%s'", l.productID)
		}
		price, _ := p.Get("price")
		lineTotal, err := mul(price, l.quantity)
		if err == nil {
			total, err = add(total, lineTotal)
		}
		if err == nil {
			changes[idx].stock, err = sub(changes[idx].stock, l.quantity)
		}
		if err != nil {
			return nil, errorf("Cannot compute the order for '%s': %v", l.productID, err)
		}
		total = round2(total)
		items = append(items, canonical.NewOrderedObject(
			canonical.Member{Key: "product_id", Value: canonical.String(l.productID)},
			canonical.Member{Key: "quantity", Value: l.quantity},
			canonical.Member{Key: "unit_price", Value: price},
		))
	}
	order := canonical.NewOrderedObject(
		canonical.Member{Key: "id", Value: canonical.String(fmt.Sprintf("O-%03d", len(st.rows(tableOrders))+1))},
		canonical.Member{Key: "customer_id", Value: canonical.String(customerID)},
		canonical.Member{Key: "status", Value: canonical.String("pending")},
		canonical.Member{Key: "items", Value: items},
		canonical.Member{Key: "total", Value: total},
	)
	// Nothing below can fail.
	st.appendRow(tableOrders, order)
	for _, c := range changes {
		products[c.row] = products[c.row].With("stock", c.stock)
	}
	return order, nil
}

func confirmPayment(st *State, args canonical.Object) (canonical.Value, error) {
	const tool = "confirm_payment"
	orderID, err := stringArg(tool, args, "order_id", "order_id")
	if err != nil {
		return nil, err
	}
	orders := st.rows(tableOrders)
	oi := findByID(orders, orderID)
	if oi < 0 {
		return nil, errorf("Order '%s' not found", orderID)
	}
	order := orders[oi]
	if status, _ := order.Get("status"); status != canonical.String("pending") {
		return nil, errorf("Order '%s' cannot be paid", orderID)
	}
	cv, _ := order.Get("customer_id")
	customerID := string(cv.(canonical.String))
	customers := st.rows(tableCustomers)
	ci := findByID(customers, customerID)
	if ci < 0 {
		return nil, errorf("Customer '%s' not found", customerID)
	}
	total, _ := order.Get("total")
	balance, _ := customers[ci].Get("balance")
	if cmpNumbers(balance, total) < 0 {
		return nil, errorf("Insufficient balance for customer '%s'", customerID)
	}
	newBalance, err := sub(balance, total)
	if err != nil {
		return nil, errorf("Cannot compute the balance of customer '%s': %v", customerID, err)
	}
	customers[ci] = customers[ci].With("balance", round2(newBalance))
	order = order.With("status", canonical.String("paid"))
	orders[oi] = order
	return order, nil
}
