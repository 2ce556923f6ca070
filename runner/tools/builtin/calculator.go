package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/scanner"
	"go/token"
	"math"
	"math/big"
	"strconv"
	"strings"

	"tolokaforge.io/operator/api/canonical"
	"tolokaforge.io/operator/api/task"
	"tolokaforge.io/operator/runner/tools"
)

func init() {
	register(Builtin{
		Name:        "calculator",
		Description: "Evaluate an arithmetic expression: numbers, + - * / % ** (or ^), unary minus and parentheses.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"expression":{"type":"string","minLength":1,"maxLength":1000,"description":"The expression, e.g. (89.99 + 2*34.5) * 1.1"}},` +
			`"required":["expression"],"additionalProperties":false}`),
		Category: task.CategoryCompute,
		New:      func(Env) tools.Tool { return toolFunc(calculatorTool) },
	})
}

type calcArgs struct {
	Expression string `json:"expression"`
}

func calculatorTool(_ context.Context, raw json.RawMessage) (string, error) {
	var a calcArgs
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	if err := required("expression", a.Expression); err != nil {
		return "", err
	}
	v, err := Calculate(a.Expression)
	if err != nil {
		return "", err
	}
	return v, nil
}

// Limits that keep a hostile expression from costing the runner: a bounded
// input, nesting depth and integer size.
const (
	maxExprLen  = 1000
	maxDepth    = 64
	maxIntBits  = 4096
	maxIntPower = 10000
)

// Calculate evaluates an arithmetic expression with Python's semantics: integer
// arithmetic stays exact, / is true division, % takes the divisor's sign, ** (or
// ^) binds tighter than unary minus on its left and is right-associative. The
// result is rendered as Python's str() would (7, 2.5, 1e+16).
//
// go/scanner tokenises; the grammar is a precedence climber rather than
// go/parser, whose ^ is XOR with the precedence of +, which would make 2*3^2
// come out as 36.
func Calculate(expr string) (string, error) {
	if len(expr) > maxExprLen {
		return "", fmt.Errorf("expression longer than %d characters", maxExprLen)
	}
	toks, err := tokenize(expr)
	if err != nil {
		return "", err
	}
	p := &calcParser{toks: toks}
	v, err := p.expr(0)
	if err != nil {
		return "", err
	}
	if t := p.peek(); t.tok != token.EOF {
		return "", fmt.Errorf("unexpected %s at position %d", t.describe(), t.pos)
	}
	return v.String(), nil
}

type calcToken struct {
	tok token.Token // token.INT, FLOAT, ADD, SUB, MUL, QUO, REM, LPAREN, RPAREN, EOF; POW is token.XOR
	lit string
	pos int // 1-based column
}

func (t calcToken) describe() string {
	switch t.tok {
	case token.EOF:
		return "end of expression"
	case token.INT, token.FLOAT:
		return "number " + t.lit
	case token.XOR:
		return "'**'"
	}
	return "'" + t.tok.String() + "'"
}

func tokenize(expr string) ([]calcToken, error) {
	fset := token.NewFileSet()
	file := fset.AddFile("expression", -1, len(expr))
	var firstErr error
	var s scanner.Scanner
	s.Init(file, []byte(expr), func(pos token.Position, msg string) {
		if firstErr == nil {
			firstErr = fmt.Errorf("position %d: %s", pos.Column, msg)
		}
	}, scanner.ScanComments)
	var toks []calcToken
	for {
		pos, tok, lit := s.Scan()
		if firstErr != nil {
			return nil, firstErr
		}
		col := fset.Position(pos).Column
		switch tok {
		case token.EOF:
			return append(toks, calcToken{tok: token.EOF, pos: len(expr) + 1}), nil
		case token.SEMICOLON:
			if lit == "\n" { // inserted by the scanner at end of line, not typed
				continue
			}
		case token.INT, token.FLOAT, token.ADD, token.SUB, token.QUO, token.REM, token.LPAREN, token.RPAREN:
			toks = append(toks, calcToken{tok: tok, lit: lit, pos: col})
			continue
		case token.XOR:
			toks = append(toks, calcToken{tok: token.XOR, lit: "^", pos: col})
			continue
		case token.DEC, token.INC:
			// "--3" is two unary minuses to Python, one decrement token to Go.
			op := token.SUB
			if tok == token.INC {
				op = token.ADD
			}
			toks = append(toks, calcToken{tok: op, pos: col}, calcToken{tok: op, pos: col + 1})
			continue
		case token.MUL:
			// "**" arrives as two adjacent MUL tokens.
			if n := len(toks); n > 0 && toks[n-1].tok == token.MUL && toks[n-1].lit == "*" && toks[n-1].pos == col-1 {
				toks[n-1] = calcToken{tok: token.XOR, lit: "**", pos: col - 1}
				continue
			}
			toks = append(toks, calcToken{tok: token.MUL, lit: "*", pos: col})
			continue
		case token.COMMENT:
			return nil, fmt.Errorf("position %d: %q is not an operator (floor division and comments are not supported)", col, lit[:2])
		case token.IDENT:
			return nil, fmt.Errorf("position %d: unexpected name %q: only numbers and operators are allowed", col, lit)
		}
		text := lit
		if text == "" {
			text = tok.String()
		}
		return nil, fmt.Errorf("position %d: unexpected %q", col, text)
	}
}

type calcParser struct {
	toks  []calcToken
	i     int
	depth int
}

func (p *calcParser) peek() calcToken { return p.toks[p.i] }
func (p *calcParser) next() calcToken {
	t := p.toks[p.i]
	if t.tok != token.EOF {
		p.i++
	}
	return t
}

func binaryPrec(t token.Token) int {
	switch t {
	case token.ADD, token.SUB:
		return 1
	case token.MUL, token.QUO, token.REM:
		return 2
	}
	return 0
}

// expr parses a chain of left-associative binary operators of precedence above
// minPrec.
func (p *calcParser) expr(minPrec int) (num, error) {
	if p.depth++; p.depth > maxDepth {
		return num{}, fmt.Errorf("expression nested deeper than %d levels", maxDepth)
	}
	defer func() { p.depth-- }()
	left, err := p.unary()
	if err != nil {
		return num{}, err
	}
	for {
		op := p.peek()
		prec := binaryPrec(op.tok)
		if prec == 0 || prec <= minPrec {
			return left, nil
		}
		p.next()
		right, err := p.expr(prec)
		if err != nil {
			return num{}, err
		}
		if left, err = apply(op, left, right); err != nil {
			return num{}, err
		}
	}
}

func (p *calcParser) unary() (num, error) {
	t := p.peek()
	if t.tok == token.SUB || t.tok == token.ADD {
		p.next()
		if p.depth++; p.depth > maxDepth {
			return num{}, fmt.Errorf("expression nested deeper than %d levels", maxDepth)
		}
		defer func() { p.depth-- }()
		v, err := p.unary()
		if err != nil || t.tok == token.ADD {
			return v, err
		}
		return v.neg(), nil
	}
	return p.power()
}

// power: atom ('**' unary)? — right-associative, and its right operand may
// carry a sign (2 ** -1).
func (p *calcParser) power() (num, error) {
	base, err := p.atom()
	if err != nil {
		return num{}, err
	}
	if op := p.peek(); op.tok == token.XOR {
		p.next()
		exp, err := p.unary()
		if err != nil {
			return num{}, err
		}
		return apply(op, base, exp)
	}
	return base, nil
}

func (p *calcParser) atom() (num, error) {
	t := p.next()
	switch t.tok {
	case token.INT:
		return parseInt(t)
	case token.FLOAT:
		f, err := strconv.ParseFloat(t.lit, 64)
		if err != nil || math.IsInf(f, 0) {
			return num{}, fmt.Errorf("position %d: invalid number %s", t.pos, t.lit)
		}
		return num{f: f}, nil
	case token.LPAREN:
		v, err := p.expr(0)
		if err != nil {
			return num{}, err
		}
		if c := p.next(); c.tok != token.RPAREN {
			return num{}, fmt.Errorf("position %d: expected ')', got %s", c.pos, c.describe())
		}
		return v, nil
	}
	return num{}, fmt.Errorf("position %d: expected a number or '(', got %s", t.pos, t.describe())
}

func parseInt(t calcToken) (num, error) {
	lit := strings.ReplaceAll(t.lit, "_", "")
	// Python 3 refuses 010; Go would read it as octal 8.
	if len(lit) > 1 && lit[0] == '0' && lit[1] >= '0' && lit[1] <= '9' {
		if strings.Trim(lit, "0") != "" {
			return num{}, fmt.Errorf("position %d: leading zeros in %s are not allowed", t.pos, t.lit)
		}
	}
	n, ok := new(big.Int).SetString(t.lit, 0)
	if !ok {
		return num{}, fmt.Errorf("position %d: invalid number %s", t.pos, t.lit)
	}
	if n.BitLen() > maxIntBits {
		return num{}, fmt.Errorf("position %d: number too large", t.pos)
	}
	return num{i: n}, nil
}

// num is an exact integer (i != nil) or a float.
type num struct {
	i *big.Int
	f float64
}

func (n num) isInt() bool { return n.i != nil }

func (n num) float() float64 {
	if n.i == nil {
		return n.f
	}
	f, _ := new(big.Float).SetInt(n.i).Float64()
	return f
}

func (n num) neg() num {
	if n.isInt() {
		return num{i: new(big.Int).Neg(n.i)}
	}
	return num{f: -n.f}
}

func (n num) String() string {
	if n.isInt() {
		return n.i.String()
	}
	return string(canonical.Marshal(canonical.Float(n.f)))
}

var errZeroDivision = errors.New("division by zero")

func apply(op calcToken, a, b num) (num, error) {
	var r num
	switch op.tok {
	case token.ADD, token.SUB, token.MUL:
		if a.isInt() && b.isInt() {
			z := new(big.Int)
			switch op.tok {
			case token.ADD:
				z.Add(a.i, b.i)
			case token.SUB:
				z.Sub(a.i, b.i)
			default:
				z.Mul(a.i, b.i)
			}
			r = num{i: z}
		} else {
			x, y := a.float(), b.float()
			switch op.tok {
			case token.ADD:
				r = num{f: x + y}
			case token.SUB:
				r = num{f: x - y}
			default:
				r = num{f: x * y}
			}
		}
	case token.QUO:
		if b.float() == 0 && (!b.isInt() || b.i.Sign() == 0) {
			return num{}, errZeroDivision
		}
		if a.isInt() && b.isInt() {
			q, _ := new(big.Rat).SetFrac(a.i, b.i).Float64()
			r = num{f: q}
		} else {
			r = num{f: a.float() / b.float()}
		}
	case token.REM:
		if a.isInt() && b.isInt() {
			if b.i.Sign() == 0 {
				return num{}, errZeroDivision
			}
			z := new(big.Int).Rem(a.i, b.i)
			if z.Sign() != 0 && z.Sign() != b.i.Sign() {
				z.Add(z, b.i)
			}
			r = num{i: z}
		} else {
			x, y := a.float(), b.float()
			if y == 0 {
				return num{}, errZeroDivision
			}
			m := math.Mod(x, y)
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			r = num{f: m}
		}
	case token.XOR:
		var err error
		if r, err = pow(a, b); err != nil {
			return num{}, err
		}
	default:
		return num{}, fmt.Errorf("position %d: unsupported operator %s", op.pos, op.describe())
	}
	if r.isInt() && r.i.BitLen() > maxIntBits {
		return num{}, errors.New("result too large")
	}
	if !r.isInt() && (math.IsInf(r.f, 0) || math.IsNaN(r.f)) {
		return num{}, errors.New("result out of range")
	}
	return r, nil
}

func pow(a, b num) (num, error) {
	if a.isInt() && b.isInt() && b.i.Sign() >= 0 {
		if !b.i.IsInt64() || b.i.Int64() > maxIntPower {
			if a.i.CmpAbs(big.NewInt(1)) <= 0 {
				// 0, 1 and -1 stay small under any positive exponent; only its
				// parity matters, so raise to 2 or 3 instead.
				e := big.NewInt(2 + int64(b.i.Bit(0)))
				return num{i: new(big.Int).Exp(a.i, e, nil)}, nil
			}
			return num{}, errors.New("result too large")
		}
		if bits := int64(a.i.BitLen()) * b.i.Int64(); bits > maxIntBits+64 {
			return num{}, errors.New("result too large")
		}
		return num{i: new(big.Int).Exp(a.i, b.i, nil)}, nil
	}
	x, y := a.float(), b.float()
	if x == 0 && y < 0 {
		return num{}, errors.New("0.0 cannot be raised to a negative power")
	}
	if x < 0 && y != math.Trunc(y) {
		return num{}, errors.New("a negative number cannot be raised to a fractional power (complex result)")
	}
	return num{f: math.Pow(x, y)}, nil
}
