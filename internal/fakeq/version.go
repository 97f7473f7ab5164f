package fakeq

import (
	"fmt"
	"os"
	"strconv"
)

// `--version` and `login`, for `qkit doctor`:
//
//	--version              prints "q 1.19.7" (q), "kiro-cli 2.21.2" (kiro) or "fakeq 0.0.0" (no
//	                       flavour), as clap prints a version: "<name> <version>". The real CLIs'
//	                       exact wording is not in the sources read; this is clap's default.
//	FAKEQ_VERSION=text     print text instead ("\n" escapes are read as line breaks)
//	login                  prints that it logged in and exits FAKEQ_LOGIN_EXIT (default 0). It
//	                       changes nothing: whoami still follows FAKEQ_LOGGED_OUT. The real
//	                       login opens a browser or prints a device code and waits for it.
func init() {
	Subcommands["--version"] = versionCommand
	Subcommands["login"] = loginCommand
}

// flavourVersions is what each flavour's --version prints.
var flavourVersions = map[string]string{
	"q":    "q 1.19.7",
	"kiro": "kiro-cli 2.21.2",
	"":     "fakeq 0.0.0",
}

func versionCommand([]string) int {
	if s := os.Getenv("FAKEQ_VERSION"); s != "" {
		fmt.Println(unescape(s))
		return 0
	}
	fmt.Println(flavourVersions[Flavour()])
	return 0
}

func loginCommand([]string) int {
	code, _ := strconv.Atoi(os.Getenv("FAKEQ_LOGIN_EXIT"))
	if code != 0 {
		fmt.Fprintln(os.Stderr, "error: login failed: the device code expired")
		return code
	}
	fmt.Println("Logged in successfully")
	return 0
}
