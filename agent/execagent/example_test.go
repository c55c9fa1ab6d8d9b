package execagent_test

import (
	"context"
	"fmt"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/agent/execagent"
)

// An agent written in POSIX sh, run as a troupe agent.
func Example() {
	a, err := execagent.New(execagent.Config{Command: []string{"sh", "testdata/agent.sh"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	d := troupe.NewDispatch()
	d.DispatchID, d.SessionID, d.QueryID = troupe.NewDispatchID(1), "sess_1", "qry_1"
	d.TargetAgent, d.DispatchReason, d.Query = "counter", "example", "how many words are here"
	res, err := a.Run(context.Background(), d)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Status, res.AgentResult["words"], res.AgentResult["language"])
	// Output: completed 5 sh
}
