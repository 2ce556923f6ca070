#!/bin/bash
echo 'Hello, World!' > /app/hello.txt
