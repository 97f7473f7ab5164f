package mcpbridge

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// FuzzBridgeAuth: an endpoint of the bridge is served only to a request whose Authorization
// header is exactly "Bearer " and its session's secret: another session's secret, another
// scheme, a prefix, a longer value, other spacing or case are refused with 401 and a
// WWW-Authenticate challenge, and the bridged server never sees them.
func FuzzBridgeAuth(f *testing.F) {
	const (
		secret = "5f0c2a9e7d1b4c3a8e6f0d2b9a7c5e3f1a0b8c6d4e2f0a1b" // token()'s form: 48 hex digits
		other  = "0b1a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6071"
	)
	for _, h := range []string{"Bearer " + secret, "Bearer " + other, "bearer " + secret, "BEARER " + secret,
		"Bearer  " + secret, "Bearer " + secret + " ", "Bearer " + secret[:47], "Bearer " + secret + "0",
		"Bearer", "Bearer ", "", "Basic " + secret, secret, "Bearer " + secret + "\x00", "Bearer\t" + secret} {
		f.Add(h, false)
	}
	f.Add("Bearer "+other, true)
	f.Fuzz(func(t *testing.T, header string, otherPath bool) {
		b := New(nil)
		served := map[string]bool{}
		for path, sec := range map[string]string{"/mcp/one": secret, "/mcp/two": other} {
			b.routes[path] = &route{secret: sec, handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				served[path] = true
				w.WriteHeader(http.StatusNoContent)
			})}
		}
		path, want := "/mcp/one", "Bearer "+secret
		if otherPath {
			path, want = "/mcp/two", "Bearer "+other
		}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1"+path, nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		b.serve(rec, req)
		if header == want {
			if rec.Code != http.StatusNoContent || !served[path] || len(served) != 1 {
				t.Fatalf("the session's own token was refused: %d, served %v", rec.Code, served)
			}
			return
		}
		if rec.Code != http.StatusUnauthorized || len(served) != 0 || rec.Header().Get("WWW-Authenticate") != "Bearer" {
			t.Fatalf("Authorization %q on %s: %d, served %v", header, path, rec.Code, served)
		}
	})
}
