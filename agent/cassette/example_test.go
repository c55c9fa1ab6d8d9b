package cassette_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupehq/troupe/agent/cassette"
)

// A test records a service's answers once, then replays them offline: the second half runs
// after the server is gone. In a real test the mode comes from the environment, e.g.
// cassette.ParseMode(os.Getenv("TROUPE_CASSETTE")), and the cassette lives in testdata/.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"answer":42}`)
	}))
	dir, _ := os.MkdirTemp("", "cassette")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "answer.json")

	call := func(c *http.Client) {
		req, _ := http.NewRequest("POST", srv.URL+"/v1/ask", strings.NewReader(`{"q":"life"}`))
		req.Header.Set("Authorization", "Bearer sk-secret")
		resp, err := c.Do(req)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Println(resp.StatusCode, string(b))
	}

	rec, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeRecord})
	call(&http.Client{Transport: rec.Transport(http.DefaultTransport)})
	if err := rec.Save(); err != nil {
		fmt.Println(err)
	}
	srv.Close()

	rep, _ := cassette.New(path, cassette.Config{Mode: cassette.ModeReplay})
	call(&http.Client{Transport: rep.Transport(nil)})
	data, _ := os.ReadFile(path)
	fmt.Println("secret in file:", strings.Contains(string(data), "sk-secret"))
	// Output:
	// 200 {"answer":42}
	// 200 {"answer":42}
	// secret in file: false
}
