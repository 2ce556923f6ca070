package canonical

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestParseErrors(t *testing.T) {
	deep := strings.Repeat("[", DefaultMaxDepth+1) + strings.Repeat("]", DefaultMaxDepth+1)
	tests := []struct {
		in     string
		offset int64
		msg    string
	}{
		{"", 0, "unexpected end of input, expected a value"},
		{"   ", 3, "unexpected end of input, expected a value"},
		{"[1,]", 3, "unexpected character ']', expected a value"},
		{`{"a":1,}`, 7, "unexpected character '}', expected a string object key"},
		{"01", 1, "unexpected character '1' after the top-level value"},
		{"1.", 2, "unexpected end of input, expected a digit after the decimal point"},
		{"1.x", 2, "unexpected character 'x' in number, expected a digit after the decimal point"},
		{"1e", 2, "unexpected end of input, expected a digit in the exponent"},
		{"-", 1, "unexpected end of input, expected a digit"},
		{"-a", 1, "unexpected character 'a' in number, expected a digit"},
		{`"abc`, 0, "unterminated string"},
		{`"ab\`, 4, "unexpected end of input, expected an escape sequence"},
		{`"\x"`, 1, "invalid escape sequence: backslash followed by character 'x' in string"},
		{`{"a" 1}`, 5, "unexpected character '1', expected ':' after object key"},
		{`{"a"`, 4, "unexpected end of input, expected ':' after object key"},
		{`{1:2}`, 1, "unexpected character '1', expected a string object key"},
		{"[1 2]", 3, "unexpected character '2', expected ',' or ']' in array"},
		{`{"a":1 "b"}`, 7, "unexpected character '\"', expected ',' or '}' in object"},
		{"[1", 2, "unexpected end of input, expected ',' or ']' in array"},
		{"nul", 0, `invalid literal, expected "null"`},
		{"tru", 0, `invalid literal, expected "true"`},
		{"NaN", 0, "NaN and Infinity are not allowed"},
		{"[1,Infinity]", 3, "NaN and Infinity are not allowed"},
		{`{"x":-Infinity}`, 5, "NaN and Infinity are not allowed"},
		{"1e400", 0, "number 1e400 is outside the float64 range"},
		{"-1.5e309", 0, "number -1.5e309 is outside the float64 range"},
		{`"\u12"`, 1, `truncated \u escape in string`},
		{`"\u12"  `, 1, `invalid \u escape "\\u12\" " in string`},
		{`"\u12g4"`, 1, `invalid \u escape "\\u12g4" in string`},
		{"\"a\x01\"", 2, "control character 0x01 in string must be escaped"},
		{"\"a\\n\x1f\"", 4, "control character 0x1f in string must be escaped"},
		{"\"ab\xffc\"", 3, "invalid UTF-8 byte 0xff in string"},
		{"\"\\n\xc3\x28\"", 3, "invalid UTF-8 byte 0xc3 in string"},
		{"\x00", 0, "unexpected byte 0x00, expected a value"},
		{"{} {}", 3, "unexpected character '{' after the top-level value"},
		{deep, DefaultMaxDepth, "nesting deeper than 1000 levels"},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.in))
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, %v; want SyntaxError", tt.in, v, err)
			continue
		}
		if se.Offset != tt.offset || se.Msg != tt.msg {
			t.Errorf("Parse(%q): offset %d %q; want offset %d %q", tt.in, se.Offset, se.Msg, tt.offset, tt.msg)
		}
	}
}

func TestParseErrorString(t *testing.T) {
	_, err := Parse([]byte("[1,]"))
	if got, want := err.Error(), "invalid JSON at offset 3: unexpected character ']', expected a value"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestParseKinds(t *testing.T) {
	tests := []struct {
		in   string
		kind Kind
		out  string
	}{
		{"300.00", KindFloat, "300.0"},
		{"34.50", KindFloat, "34.5"},
		{"1E2", KindFloat, "100.0"},
		{"300", KindInt, "300"},
		{"-0", KindInt, "0"},
		{"-0.0", KindFloat, "-0.0"},
		{"1e-400", KindFloat, "0.0"},
		{"123456789012345678901234567890", KindInt, "123456789012345678901234567890"},
		{" \t\n\r null \n", KindNull, "null"},
		{`"\/"`, kindString, `"/"`},
		{`{"b":1,"a":2,"b":3}`, KindObject, `{"a":2,"b":3}`},
		{`[{"z":[]},{}]`, KindArray, `[{"z":[]},{}]`},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.in))
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if v.Kind() != tt.kind || string(Marshal(v)) != tt.out {
			t.Errorf("Parse(%q) = %s %s, want %s %s", tt.in, v.Kind(), Marshal(v), tt.kind, tt.out)
		}
	}
}

func TestParseMaxDepthOption(t *testing.T) {
	if _, err := ParseWith([]byte("[[[]]]"), ParseOptions{MaxDepth: 3}); err != nil {
		t.Fatalf("depth 3 within limit 3: %v", err)
	}
	_, err := ParseWith([]byte("[[[[]]]]"), ParseOptions{MaxDepth: 3})
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 3 || se.Msg != "nesting deeper than 3 levels" {
		t.Fatalf("depth 4 with limit 3: %v", err)
	}
}

func TestParseMaxNumberDigitsOption(t *testing.T) {
	tests := []struct {
		in      string
		limit   int
		wantErr string
	}{
		{`[12345]`, 5, ""},
		{`[-1.2e3]`, 3, ""},
		{`[123456]`, 5, "invalid JSON at offset 1: number literal has 6 digits, more than the limit of 5 (max_number_digits)"},
		{`{"a":-1.25e100}`, 5, "invalid JSON at offset 5: number literal has 6 digits, more than the limit of 5 (max_number_digits)"},
		{`[0.000001]`, 5, "invalid JSON at offset 1: number literal has 7 digits, more than the limit of 5 (max_number_digits)"},
		{`[1234567890123]`, 0, ""},
	}
	for _, tt := range tests {
		v, err := ParseWith([]byte(tt.in), ParseOptions{MaxNumberDigits: tt.limit})
		if tt.wantErr == "" {
			if err != nil || v == nil {
				t.Errorf("ParseWith(%s, %d): %v", tt.in, tt.limit, err)
			}
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || err.Error() != tt.wantErr || se.Limit != "max_number_digits" {
			t.Errorf("ParseWith(%s, %d) = %v, want %q", tt.in, tt.limit, err, tt.wantErr)
		}
	}
	_, err := ParseWith([]byte("[[[[]]]]"), ParseOptions{MaxDepth: 3})
	if se, ok := err.(*SyntaxError); !ok || se.Limit != "max_depth" {
		t.Fatalf("depth error does not name its limit: %#v", err)
	}
}

func TestLoneSurrogatesRoundTrip(t *testing.T) {
	v, err := Parse([]byte(`{"\udc00":"a\ud800b","\ud800":1}`))
	if err != nil {
		t.Fatal(err)
	}
	// Code-point order puts U+D800 before U+DC00.
	if got, want := string(Marshal(v)), `{"\ud800":1,"\udc00":"a\ud800b"}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,2.5,-0.0,1e16,"\u00e9\ud83d\ude00",null,true,false]}`,
		`"\ud800"`, `[1,]`, `1e400`, `NaN`, `{"a":1,"a":2}`, "\"\x7f\"", `0.1`, `-`,
		`123456789012345678901234567890`, `{"":{"":[]}}`, "\"\xff\"",
		`[123456789,1.23456789,1e123456789]`, `-0.00000000`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		// A digit bound only ever turns an acceptance into a named refusal.
		lv, lerr := ParseWith(data, ParseOptions{MaxNumberDigits: 8})
		if lerr == nil && (err != nil || !Equal(v, lv)) {
			t.Fatalf("digit limit accepted %q differently: %v", data, err)
		}
		if se, ok := lerr.(*SyntaxError); ok && se.Limit == "max_number_digits" && !hasDigitRun(data, 9) && !hasNumberOver(data, 8) {
			t.Fatalf("digit limit refused %q without a long number: %v", data, lerr)
		}
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Offset < 0 || se.Offset > int64(len(data)) {
				t.Fatalf("error %v is not a SyntaxError within the input", err)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Parse accepted %q, which is not valid JSON", data)
		}
		out := Marshal(v)
		v2, err := Parse(out)
		if err != nil {
			t.Fatalf("canonical output %q does not parse: %v", out, err)
		}
		if out2 := Marshal(v2); string(out2) != string(out) {
			t.Fatalf("canonical form not stable: %q then %q", out, out2)
		}
		if !Equal(v, v2) {
			t.Fatalf("value changed through the canonical form: %q", data)
		}
		for _, c := range out {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("canonical output has non-ASCII byte 0x%02x: %q", c, out)
			}
		}
	})
}

func hasDigitRun(data []byte, n int) bool {
	run := 0
	for _, c := range data {
		if c >= '0' && c <= '9' {
			run++
			if run >= n {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}

// hasNumberOver reports whether some run of number characters holds more than n digits.
func hasNumberOver(data []byte, n int) bool {
	digits := 0
	for _, c := range data {
		switch {
		case c >= '0' && c <= '9':
			digits++
			if digits > n {
				return true
			}
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
		default:
			digits = 0
		}
	}
	return false
}
