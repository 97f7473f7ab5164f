// Command q is the fake Amazon Q CLI of package fakeq, built for benchmarks and manual runs:
// go build -o bin/q ./internal/fakeq/q
package main

import (
	"os"

	"github.com/qkit-cli/qkit/internal/fakeq"
)

func main() { os.Exit(fakeq.Main()) }
