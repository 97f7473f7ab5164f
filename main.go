// Command qkit makes the Amazon Q Developer CLI scriptable and connectable.
package main

import (
	"os"

	"github.com/qkit-cli/qkit/cmd"
)

func main() { os.Exit(cmd.Main(os.Args[1:])) }
