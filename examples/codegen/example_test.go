package codegen_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe/agent/cassette"
	"github.com/troupehq/troupe/examples/codegen"
)

func ExampleNormalize() {
	a, _ := codegen.Normalize("func Sum(xs []int) int { total := 0; for _, x := range xs { total += x }; return total }")
	b, _ := codegen.Normalize("```go\npackage main\n\n// Sum adds.\nfunc Sum(nums []int) int {\n\ts := 0\n\tfor _, n := range nums {\n\t\ts += n\n\t}\n\treturn s\n}\n```")
	fmt.Println(a == b)
	fmt.Print(a)
	// Output:
	// true
	// package p
	//
	// func Sum(_v1 []int) int {
	// 	_v2 := 0
	// 	for _, _v3 := range _v1 {
	// 		_v2 += _v3
	// 	}
	// 	return _v2
	// }
}

// ExampleVote replays a recorded vote: against a live endpoint, leave HTTPClient nil and take
// the rest from the environment with codegen.Env(os.Getenv).
func ExampleVote() {
	c, err := codegen.OpenCassette("testdata/vote_majority.json", cassette.ModeReplay)
	if err != nil {
		panic(err)
	}
	cfg := codegen.Config{BaseURL: "http://llm.invalid/v1", Model: "mock-model", HTTPClient: c.Client()}
	v, err := codegen.Vote(context.Background(), cfg, "Write a Go function Sum(xs []int) int that returns the sum of the integers in xs.")
	if err != nil {
		panic(err)
	}
	fmt.Println(v.Tally.Voters[v.Canonical], v.Tally.Counts[v.Canonical], "of", len(v.Code))
	// Output: [implementer_a implementer_b] 2 of 3
}
