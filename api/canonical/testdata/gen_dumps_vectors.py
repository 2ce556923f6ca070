# Regenerates python_dumps_vectors.json with CPython's json module: every json.dumps
# layout Dump offers, for the 60 inputs of the shared canonical vectors (first copied
# from shared/vectors/stable_hash.json for the shop's former encoder) plus documents
# whose key order matters. Run: python3 gen_dumps_vectors.py > python_dumps_vectors.json
import json, sys

with open("python_dumps_vectors.json") as f:
    inputs = [c["json"] for c in json.load(f)["canonical"]][:60]

ordered = [
    r'{"z": 1, "a": 2, "m": {"b": 300.00, "a": 34.50}}',
    r'{"b": 1, "a": 2, "b": 3}',
    r'{"a": {}, "c": [], "b": [{"y": null, "x": true}, {}]}',
    r'{"id": "O-001", "customer_id": "C-101", "status": "pending", "items": [{"product_id": "P-001", "quantity": 1, "unit_price": 89.99}], "total": 158.99}',
    r'{"\u00e9": "\ud83d\ude00", "\ud800": "\u007f/<>&\u2028", "A": -0.0}',
    r'[{"2": 1e16, "10": 1e-5, "1": 12345678901234567890}]',
]

def case(doc):
    v = json.loads(doc)
    return {
        "json": doc,
        "canonical": json.dumps(v, sort_keys=True, separators=(",", ":")),
        "dumps": json.dumps(v),
        "compact": json.dumps(v, separators=(",", ":")),
        "sorted": json.dumps(v, sort_keys=True),
    }

json.dump({
    "about": "Written by gen_dumps_vectors.py with CPython: for each json, json.dumps(json.loads(json)) "
             "as 'dumps', with separators=(',', ':') as 'compact', with sort_keys=True as 'sorted', "
             "and with both as 'canonical'.",
    "canonical": [case(d) for d in inputs],
    "ordered": [case(d) for d in ordered],
}, sys.stdout, indent=1, ensure_ascii=True)
sys.stdout.write("\n")
