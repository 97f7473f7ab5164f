package mcpserver

import "testing"

func TestIsResponse(t *testing.T) {
	for msg, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"result":{"big":[1,2,3]}}`:                    true,
		`{"jsonrpc":"2.0","id":"a","error":{"code":-1,"message":"x"}}`:         true,
		`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{}}`:   false,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"p":1}}`: false,
		`not json`: false,
		`[]`:       false,
	} {
		if got := isResponse([]byte(msg)); got != want {
			t.Errorf("isResponse(%s) = %v, want %v", msg, got, want)
		}
	}
}
