#!/bin/bash
# Terminal-Bench 1's shape: pytest -rA, whose summary the harness parses.
cd "$TEST_DIR"
python3 -m pytest test_outputs.py -rA -p no:cacheprovider
