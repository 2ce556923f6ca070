# Regenerates python_vectors.json with CPython's json module (the reference the
# canonical encoder must match byte for byte). Run: python3 gen_python_vectors.py
import json, random, struct, sys

random.seed(20261130)

def dumps(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"))

floats = []
edge = ["0.0", "-0.0", "1.0", "-1.0", "0.1", "0.30000000000000004", "300.00", "34.50",
        "1e16", "1E16", "9999999999999998.0", "1e15", "123456789012345678.0", "1e-4",
        "0.0001", "0.00001", "1e-5", "1.5e-7", "1e100", "1.7976931348623157e308",
        "5e-324", "2.2250738585072014e-308", "1e22", "1e21", "123.456e2", "-2.5E-3",
        "4.35", "0.1e1", "100e-2", "12345678901234567e0", "1.0e+16", "9007199254740993.0"]
for lit in edge:
    floats.append({"json": lit, "canonical": dumps(json.loads(lit))})
for _ in range(400):
    bits = random.getrandbits(64)
    f = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if f != f or f in (float("inf"), float("-inf")):
        continue
    floats.append({"json": repr(f), "canonical": dumps(f)})
for _ in range(200):
    f = random.uniform(-1e6, 1e6)
    f = round(f, random.randint(0, 6))
    floats.append({"json": "%.*f" % (random.randint(0, 8), f), "canonical": None})
for c in floats:
    if c["canonical"] is None:
        c["canonical"] = dumps(json.loads(c["json"]))

ints = []
for lit in ["0", "-0", "7", "-7", "9223372036854775807", "9223372036854775808",
            "-9223372036854775808", "-9223372036854775809",
            "123456789012345678901234567890123456789"]:
    ints.append({"json": lit, "canonical": dumps(json.loads(lit))})

strings = []
for lit in [r'"\ud800"', r'"\udfff"', r'"a\ud83dZ"', r'"\ude00\ud83d"', r'"\ud83d\ude00"',
            r'"\u2028\u2029"', r'"\u007f\u0080\u00ff"', r'"\/"', r'"\b\f\n\r\t\"\\"',
            '"\x7f"', r'"\u0000"', r'"\uFFFF"', r'"\uD834\uDD1E"', '"\U0010ffff"']:
    strings.append({"json": lit, "canonical": dumps(json.loads(lit))})

indent_docs = [r'{"b": [1, 2.50, {"z": null, "a": []}], "a": {}, "c": "\u00e9\n"}',
               '[]', '{}', '[[]]', '[{}, [1], "x"]', '3.0', '"s"',
               '{"k": {"k": {"k": [true, false, null]}}}']
indent = [{"json": d, "indent": json.dumps(json.loads(d), sort_keys=True, indent=2)} for d in indent_docs]

# Equality per Python ==, with booleans excluded by the caller's rule.
json.dump({"floats": floats, "ints": ints, "strings": strings, "indent": indent},
          sys.stdout, indent=1, ensure_ascii=True)
