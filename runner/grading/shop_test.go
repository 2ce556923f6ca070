package grading

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/dbservice/client"
)

// ---- the shop domain (shared/spec/shop-domain.md), as plain Go over DB PATCH ----

func readTable(ctx context.Context, db *client.Client, id, table string) (canonical.Array, error) {
	st, err := db.State(ctx, id, []string{table})
	if err != nil {
		return nil, err
	}
	v, err := canonical.Parse(st.Data[table])
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", table, err)
	}
	arr, _ := v.(canonical.Array)
	return arr, nil
}

func findByID(recs canonical.Array, id string) (canonical.Object, bool) {
	for _, r := range recs {
		o, ok := r.(canonical.Object)
		if !ok {
			continue
		}
		if v, ok := o.Get("id"); ok && canonical.Equal(v, canonical.String(id)) {
			return o, true
		}
	}
	return canonical.Object{}, false
}

func str(o canonical.Object, k string) string {
	v, _ := o.Get(k)
	s, _ := v.(canonical.String)
	return string(s)
}

func num(o canonical.Object, k string) float64 {
	v, _ := o.Get(k)
	switch x := v.(type) {
	case canonical.Float:
		return float64(x)
	case canonical.Int:
		n, _ := x.Int64()
		return float64(n)
	}
	return 0
}

func integer(o canonical.Object, k string) int64 {
	v, _ := o.Get(k)
	switch x := v.(type) {
	case canonical.Int:
		n, _ := x.Int64()
		return n
	case canonical.Float:
		return int64(x)
	}
	return 0
}

// round2 is Python's round(x, 2) on the binary value.
func round2(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return r
}

func raw(v canonical.Value) json.RawMessage { return json.RawMessage(canonical.Marshal(v)) }

func patch(ctx context.Context, db *client.Client, id, table string, ops ...client.Operation) error {
	_, err := db.Patch(ctx, id, table, client.PatchRequest{Operations: ops})
	return err
}

func filterID(id string) json.RawMessage {
	return raw(canonical.NewObject(canonical.Member{Key: "id", Value: canonical.String(id)}))
}

func shopTools() map[string]toolFunc {
	return map[string]toolFunc{
		"list_products": func(ctx context.Context, db *client.Client, id string, _ canonical.Object) (string, error) {
			products, err := readTable(ctx, db, id, "products")
			if err != nil {
				return "", err
			}
			var out canonical.Array
			for _, p := range products {
				if o, ok := p.(canonical.Object); ok && integer(o, "stock") > 0 {
					out = append(out, o)
				}
			}
			return string(canonical.Marshal(out)), nil
		},
		"get_customer": func(ctx context.Context, db *client.Client, id string, args canonical.Object) (string, error) {
			customers, err := readTable(ctx, db, id, "customers")
			if err != nil {
				return "", err
			}
			c, ok := findByID(customers, str(args, "customer_id"))
			if !ok {
				return "", &toolError{fmt.Sprintf("Customer '%s' not found", str(args, "customer_id"))}
			}
			return string(canonical.Marshal(c)), nil
		},
		"place_order":     placeOrder,
		"confirm_payment": confirmPayment,
	}
}

func placeOrder(ctx context.Context, db *client.Client, id string, args canonical.Object) (string, error) {
	customers, err := readTable(ctx, db, id, "customers")
	if err != nil {
		return "", err
	}
	cid := str(args, "customer_id")
	if _, ok := findByID(customers, cid); !ok {
		return "", &toolError{fmt.Sprintf("Customer '%s' not found", cid)}
	}
	products, err := readTable(ctx, db, id, "products")
	if err != nil {
		return "", err
	}
	orders, err := readTable(ctx, db, id, "orders")
	if err != nil {
		return "", err
	}
	itemsV, _ := args.Get("items")
	items, _ := itemsV.(canonical.Array)
	total := 0.0
	var lines canonical.Array
	var stockOps []client.Operation
	for _, it := range items {
		io, _ := it.(canonical.Object)
		pid := str(io, "product_id")
		p, ok := findByID(products, pid)
		if !ok {
			return "", &toolError{fmt.Sprintf("Product '%s' not found", pid)}
		}
		qty := integer(io, "quantity")
		if integer(p, "stock") < qty {
			return "", &toolError{fmt.Sprintf("Insufficient stock for '%s'", pid)}
		}
		price := num(p, "price")
		total = round2(total + price*float64(qty))
		lines = append(lines, canonical.NewObject(
			canonical.Member{Key: "product_id", Value: canonical.String(pid)},
			canonical.Member{Key: "quantity", Value: canonical.NewInt(qty)},
			canonical.Member{Key: "unit_price", Value: canonical.Float(price)},
		))
		stockOps = append(stockOps, client.Update(filterID(pid),
			raw(canonical.NewObject(canonical.Member{Key: "stock", Value: canonical.NewInt(integer(p, "stock") - qty)}))))
	}
	order := canonical.NewObject(
		canonical.Member{Key: "id", Value: canonical.String(fmt.Sprintf("O-%03d", len(orders)+1))},
		canonical.Member{Key: "customer_id", Value: canonical.String(cid)},
		canonical.Member{Key: "status", Value: canonical.String("pending")},
		canonical.Member{Key: "items", Value: lines},
		canonical.Member{Key: "total", Value: canonical.Float(total)},
	)
	if err := patch(ctx, db, id, "orders", client.Insert(raw(order))); err != nil {
		return "", err
	}
	if err := patch(ctx, db, id, "products", stockOps...); err != nil {
		return "", err
	}
	return string(canonical.Marshal(order)), nil
}

func confirmPayment(ctx context.Context, db *client.Client, id string, args canonical.Object) (string, error) {
	orders, err := readTable(ctx, db, id, "orders")
	if err != nil {
		return "", err
	}
	oid := str(args, "order_id")
	o, ok := findByID(orders, oid)
	if !ok {
		return "", &toolError{fmt.Sprintf("Order '%s' not found", oid)}
	}
	if str(o, "status") != "pending" {
		return "", &toolError{fmt.Sprintf("Order '%s' cannot be paid", oid)}
	}
	customers, err := readTable(ctx, db, id, "customers")
	if err != nil {
		return "", err
	}
	cid := str(o, "customer_id")
	c, _ := findByID(customers, cid)
	if num(c, "balance") < num(o, "total") {
		return "", &toolError{fmt.Sprintf("Insufficient balance for customer '%s'", cid)}
	}
	balance := round2(num(c, "balance") - num(o, "total"))
	if err := patch(ctx, db, id, "customers", client.Update(filterID(cid),
		raw(canonical.NewObject(canonical.Member{Key: "balance", Value: canonical.Float(balance)})))); err != nil {
		return "", err
	}
	if err := patch(ctx, db, id, "orders", client.Update(filterID(oid),
		raw(canonical.NewObject(canonical.Member{Key: "status", Value: canonical.String("paid")})))); err != nil {
		return "", err
	}
	return string(canonical.Marshal(o.With("status", canonical.String("paid")))), nil
}
