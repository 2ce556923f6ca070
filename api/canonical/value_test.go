package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t testing.TB, s string) Value {
	t.Helper()
	v, err := Parse([]byte(s))
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return v
}

func TestEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"1", "1.0", true},
		{"1.0", "1", true},
		{"0", "-0.0", true},
		{"1", "1.5", false},
		{"true", "1", false},
		{"false", "0", false},
		{"true", "true", true},
		{"null", "null", true},
		{"null", "false", false},
		{`"1"`, "1", false},
		{"9007199254740993", "9007199254740992.0", false},
		{"9007199254740992", "9007199254740992.0", true},
		{"100000000000000000000", "1e20", true},
		{"100000000000000000001", "1e20", false},
		{"-9223372036854775808", "-9.223372036854775808e18", true},
		{"9223372036854775808", "9.223372036854775808e18", true},
		{"123456789012345678901234567890", "123456789012345678901234567890", true},
		{"123456789012345678901234567890", "123456789012345678901234567891", false},
		{"[1,2.0]", "[1.0,2]", true},
		{"[1,2]", "[1,2,3]", false},
		{`{"a":1,"b":[true]}`, `{"b":[true],"a":1.0}`, true},
		{`{"a":1}`, `{"a":1,"b":null}`, false},
		{`{"a":1}`, `{"b":1}`, false},
		{`{}`, `[]`, false},
	}
	for _, tt := range tests {
		a, b := mustParse(t, tt.a), mustParse(t, tt.b)
		if got := Equal(a, b); got != tt.want {
			t.Errorf("Equal(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := Equal(b, a); got != tt.want {
			t.Errorf("Equal(%s, %s) = %v, want %v (reversed)", tt.b, tt.a, got, tt.want)
		}
		ka, okA := EqualityKey(a)
		kb, okB := EqualityKey(b)
		if okA && okB && (ka == kb) != tt.want {
			t.Errorf("EqualityKey(%s)=%q, EqualityKey(%s)=%q disagree with Equal=%v", tt.a, ka, tt.b, kb, tt.want)
		}
	}
	if Equal(Float(math.NaN()), Float(math.NaN())) {
		t.Error("NaN must not equal NaN")
	}
	if !Equal(nil, Null{}) {
		t.Error("a nil Value is null")
	}
}

func TestEqualityKeyKinds(t *testing.T) {
	tests := []struct {
		v    Value
		key  string
		okay bool
	}{
		{Null{}, "z", true},
		{Bool(true), "b1", true},
		{String("x"), "sx", true},
		{NewInt(-3), "n-3", true},
		{Float(-3), "n-3", true},
		{Float(2.5), "f2.5", true},
		{Float(1e300), "n1000000000000000052504760255204420248704468581108159154915854115511802457988908195786371375080447864043704443832883878176942523235360430575644792184786706982848387200926575803737830233794788090059368953234970799945081119038967640880074652742780142494579258788820056842838115669472196386865459400540160", true},
		{Float(math.Inf(-1)), "f-Infinity", true},
		{Float(math.NaN()), "", false},
		{Array{}, "", false},
		{Object{}, "", false},
	}
	for _, tt := range tests {
		key, ok := EqualityKey(tt.v)
		if key != tt.key || ok != tt.okay {
			t.Errorf("EqualityKey(%#v) = %q, %v; want %q, %v", tt.v, key, ok, tt.key, tt.okay)
		}
	}
}

func TestObjectOperations(t *testing.T) {
	o := NewObject(Member{"b", NewInt(1)}, Member{"a", NewInt(2)}, Member{"b", NewInt(3)})
	if got := string(Marshal(o)); got != `{"a":2,"b":3}` {
		t.Fatalf("NewObject = %s", got)
	}
	merged := o.Merge(mustParse(t, `{"c":true,"a":"x"}`).(Object))
	if got := string(Marshal(merged)); got != `{"a":"x","b":3,"c":true}` {
		t.Errorf("Merge = %s", got)
	}
	if got := string(Marshal(o)); got != `{"a":2,"b":3}` {
		t.Errorf("Merge modified its receiver: %s", got)
	}
	if got := string(Marshal(merged.Without("b", "zz"))); got != `{"a":"x","c":true}` {
		t.Errorf("Without = %s", got)
	}
	if got := string(Marshal(o.With("0", Null{}))); got != `{"0":null,"a":2,"b":3}` {
		t.Errorf("With = %s", got)
	}
	if v, ok := merged.Get("c"); !ok || v != Bool(true) {
		t.Errorf("Get(c) = %v, %v", v, ok)
	}
	if _, ok := merged.Get("zz"); ok {
		t.Error("Get(zz) found a missing key")
	}
	if got := merged.Keys(); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("Keys = %v", got)
	}
	big := NewObject()
	for _, k := range []string{"k9", "k1", "k5", "k3", "k7", "k2", "k8", "k4", "k6", "k0"} {
		big = big.With(k, String(k))
	}
	if v, ok := big.Get("k6"); !ok || v != String("k6") {
		t.Errorf("Get on a 10-key object = %v, %v", v, ok)
	}
	if _, ok := big.Get("k66"); ok {
		t.Error("Get(k66) on a 10-key object found a missing key")
	}
}

func TestFromAnyToAny(t *testing.T) {
	in := map[string]any{
		"f":   300.0,
		"i":   int64(300),
		"u":   uint64(math.MaxUint64),
		"n":   json.Number("34.50"),
		"m":   json.Number("7"),
		"b":   big.NewInt(-5),
		"r":   json.RawMessage(`{"x":[1.0]}`),
		"nil": nil,
		"arr": []any{"s", true, float32(0.5)},
	}
	v, err := FromAny(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"arr":["s",true,0.5],"b":-5,"f":300.0,"i":300,"m":7,"n":34.5,"nil":null,"r":{"x":[1.0]},"u":18446744073709551615}`
	if got := string(Marshal(v)); got != want {
		t.Fatalf("FromAny = %s\nwant %s", got, want)
	}
	back := ToAny(v).(map[string]any)
	if back["f"] != json.Number("300.0") || back["i"] != json.Number("300") || back["nil"] != nil {
		t.Errorf("ToAny numbers/null: %#v %#v %#v", back["f"], back["i"], back["nil"])
	}
	again, err := FromAny(back)
	if err != nil || string(Marshal(again)) != want {
		t.Errorf("round trip through ToAny = %s, %v", Marshal(again), err)
	}
	for _, bad := range []any{math.NaN(), map[string]any{"x": []any{math.Inf(1)}}, json.Number("1x"), struct{}{}} {
		if _, err := FromAny(bad); err == nil {
			t.Errorf("FromAny(%#v) succeeded", bad)
		}
	}
	_, err = FromAny(map[string]any{"x": []any{1, math.Inf(1)}})
	if err == nil || err.Error() != `$["x"][1]: NaN and Infinity are not allowed` {
		t.Errorf("error path: %v", err)
	}
}

func TestMarshalJSONInterop(t *testing.T) {
	v := mustParse(t, `{"a":300.0,"b":[1,"\u00e9"]}`)
	got, err := json.Marshal(map[string]any{"v": v})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"v":{"a":300.0,"b":[1,"\u00e9"]}}` {
		t.Fatalf("json.Marshal = %s", got)
	}
	if _, err := json.Marshal(Array{Float(math.NaN())}); err == nil {
		t.Fatal("NaN marshalled through encoding/json")
	}
}

func TestEncodeGoBuiltValues(t *testing.T) {
	tests := []struct {
		v    Value
		want string
	}{
		{Float(math.NaN()), "NaN"},
		{Float(math.Inf(1)), "Infinity"},
		{Float(math.Inf(-1)), "-Infinity"},
		{String("a\xffb"), `"a\ufffdb"`},
		{nil, "null"},
		{Array{nil, Null{}}, "[null,null]"},
		{NewBigInt(new(big.Int).Lsh(big.NewInt(1), 80)), "1208925819614629174706176"},
		{NewBigInt(big.NewInt(12)), "12"},
	}
	for _, tt := range tests {
		if got := string(Marshal(tt.v)); got != tt.want {
			t.Errorf("Marshal(%#v) = %s, want %s", tt.v, got, tt.want)
		}
	}
	if n, ok := NewBigInt(big.NewInt(12)).Int64(); !ok || n != 12 {
		t.Error("a small big.Int must normalise to int64")
	}
	if _, ok := mustParse(t, "99999999999999999999").(Int).Int64(); ok {
		t.Error("a 20-digit Int reported fitting int64")
	}
	if got := mustParse(t, "99999999999999999999").(Int).Big().String(); got != "99999999999999999999" {
		t.Errorf("Big() = %s", got)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestWriteToStreams(t *testing.T) {
	arr := make(Array, 5000)
	for i := range arr {
		arr[i] = NewObject(Member{"k", String(strings.Repeat("é", 20))}, Member{"n", Float(float64(i) / 3)})
	}
	var buf bytes.Buffer
	if err := writeTo(&buf, arr); err != nil {
		t.Fatal(err)
	}
	if want := Marshal(arr); !bytes.Equal(buf.Bytes(), want) || len(want) < 4*flushAt {
		t.Fatalf("streamed %d bytes, Marshal %d", buf.Len(), len(want))
	}
	if got, want := Hash(arr), sha(Marshal(arr)); got != want {
		t.Fatalf("Hash %s != sha256(Marshal) %s", got, want)
	}
	fw := &failingWriter{}
	if err := writeTo(fw, arr); err == nil || err.Error() != "disk full" || fw.n != 1 {
		t.Fatalf("WriteTo into a failing writer = %v after %d writes", err, fw.n)
	}
}
