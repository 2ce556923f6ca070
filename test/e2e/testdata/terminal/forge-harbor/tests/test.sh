#!/bin/bash
# The verifier: /logs/verifier/reward.txt says 1 when /app/hello.txt holds
# exactly "Hello, World!", else 0.
if [ "$(cat /app/hello.txt 2>/dev/null)" = "Hello, World!" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
