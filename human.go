package troupe

import "context"

// Question is what a run asks a human: either an agent's question (Dispatch.Ask) or a review of
// a result that came back with requires_human.
type Question struct {
	ID         string   `json:"id"`   // stable within the run; answers refer to it
	Kind       string   `json:"kind"` // "question" or "review"
	DispatchID string   `json:"dispatch_id,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	Prompt     string   `json:"prompt"`
	Options    []string `json:"options,omitempty"`
	Data       any      `json:"data,omitempty"`
	// Result is, for a review, the whole result under review (Data is its agent_result). A
	// run paused on the review takes this result when it is resumed, so the answer is applied
	// to what the human was shown, not to a result the agent would make again.
	Result *Result `json:"result,omitempty"`
}

// Question kinds.
const (
	QuestionAsk    = "question"
	QuestionReview = "review"
)

// Answer is a human's reply. For a review, Approved says whether the result stands.
type Answer struct {
	QuestionID string `json:"question_id"`
	Text       string `json:"text,omitempty"`
	Approved   bool   `json:"approved"`
	Data       any    `json:"data,omitempty"`
}

// HumanHandler answers questions for a run: a terminal prompt, a chat front end, a ticket
// queue. It may block until a human replies; ctx ends when the run is cancelled.
type HumanHandler interface {
	Answer(ctx context.Context, q Question) (Answer, error)
}

// HumanFunc adapts a function to HumanHandler.
type HumanFunc func(ctx context.Context, q Question) (Answer, error)

// Answer calls f.
func (f HumanFunc) Answer(ctx context.Context, q Question) (Answer, error) { return f(ctx, q) }

// Guardrail checks a dispatch before it runs and its result after (seed 001's PolicyEnforcer).
// A verdict can block — the dispatch fails with code BLOCKED — or annotate the result.
// Guardrails are configured per agent (Guard) or per run (Request.Guardrails), never built in.
type Guardrail interface {
	Name() string
	CheckDispatch(ctx context.Context, d *Dispatch) Verdict
	CheckResult(ctx context.Context, d *Dispatch, r *Result) Verdict
}

// Verdict is a guardrail's judgement.
type Verdict struct {
	Block       bool
	Reason      string
	Warnings    []string
	Annotations map[string]any
}

// GuardrailFuncs builds a Guardrail from functions; a nil function allows everything.
type GuardrailFuncs struct {
	ID     string
	Before func(ctx context.Context, d *Dispatch) Verdict
	After  func(ctx context.Context, d *Dispatch, r *Result) Verdict
}

// Name returns ID.
func (g GuardrailFuncs) Name() string { return g.ID }

// CheckDispatch calls Before.
func (g GuardrailFuncs) CheckDispatch(ctx context.Context, d *Dispatch) Verdict {
	if g.Before == nil {
		return Verdict{}
	}
	return g.Before(ctx, d)
}

// CheckResult calls After.
func (g GuardrailFuncs) CheckResult(ctx context.Context, d *Dispatch, r *Result) Verdict {
	if g.After == nil {
		return Verdict{}
	}
	return g.After(ctx, d, r)
}
