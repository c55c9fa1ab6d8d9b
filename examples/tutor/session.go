package tutor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/troupehq/troupe"
	"github.com/troupehq/troupe/engine"
	"github.com/troupehq/troupe/route"
)

// Registry registers the five specialists of a, each with the session state it reads and
// writes (seed 003's "State Written"). A declared read that is absent fails the dispatch with
// STATE_MISSING before the agent runs, which the session's error policy turns into "run
// diagnostic first".
func Registry(a *Specialists) (*troupe.Registry, error) {
	reg := troupe.NewRegistry()
	for _, s := range []struct {
		name string
		fn   troupe.AgentFunc
		desc string
		opts []troupe.Option
	}{
		{"diagnostic", a.Diagnostic, "probes the topic's prerequisites and estimates mastery per concept",
			[]troupe.Option{troupe.Writes(KeyCurrentTopic, "diagnostic_complete", KeyPrerequisiteGaps, KeyLearnerLevel, "recommendation", KeyMastery, KeyQuizPaused)}},
		{"tutor", a.Tutor, "explains the current topic at the learner's level from the corpus",
			[]troupe.Option{troupe.Reads(KeyCurrentTopic, KeyLearnerLevel), troupe.Writes("explanation", "examples_provided")}},
		{"quiz", a.Quiz, "draws questions with the session's seed, asks and grades them",
			[]troupe.Option{troupe.Reads(KeyCurrentTopic), troupe.Writes(KeyQuizQuestions, KeyQuizResponses, KeyQuizScore, KeyQuizQuestionIndex, KeyQuizPaused, KeyQuizComplete, "quiz_number", KeyQuizDifficulty)}},
		{"feedback", a.Feedback, "classifies errors of the graded quiz and updates mastery",
			[]troupe.Option{troupe.Reads(KeyQuizQuestions, KeyQuizResponses, KeyQuizScore), troupe.Writes("error_patterns", "feedback_text", KeyMasteryScore, KeyMasteryAchieved, "improvement_areas", KeyMastery)}},
		{"pathplanner", a.PathPlanner, "orders unmastered concepts by their prerequisites",
			[]troupe.Option{troupe.Writes("learning_path", "next_topic", "path_reasoning")}},
		{"learning_cycle", a.learningCycle(), "seed 003's LearningCycle: tutor → quiz → feedback",
			[]troupe.Option{troupe.Reads(KeyCurrentTopic), troupe.Writes(cycleWrites...)}},
		{"mastery_loop", a.masteryLoop(), "seed 003's MasteryLoop: the learning cycle until mastered",
			[]troupe.Option{troupe.Reads(KeyCurrentTopic), troupe.Writes(cycleWrites...)}},
	} {
		if err := reg.Add(s.name, s.fn, append([]troupe.Option{troupe.Describe(s.desc)}, s.opts...)...); err != nil {
			return nil, fmt.Errorf("tutor: %w", err)
		}
	}
	return reg, nil
}

// SessionConfig configures a Session. The zero value is a session over the shipped corpus
// with seed 1 whose questions pause (no one to answer them).
type SessionConfig struct {
	// Corpus is the teaching material; nil means DefaultCorpus.
	Corpus *Corpus
	// Agents tunes the specialists.
	Specialists Config
	// Human answers the quiz's and the diagnostic's questions: a terminal, a script, a test.
	Human troupe.HumanHandler
	// Seed draws the quiz questions and the run ids; 0 means 1.
	Seed uint64
	// Goals are the learner's stated goals, most important first: concept ids, names or
	// aliases (seed 003's PathPlanner input). The session state holds them as KeyGoals, and
	// "what's next" plans toward them; a message naming concepts ("what's next for decimals")
	// plans toward those instead. Nil: toward the current topic.
	Goals []string
	// Coordinator routes each message; nil means Coordinator(), seed 003's table. A table
	// loaded from troupe.yaml lets a user change the routing without changing Go code.
	Coordinator *route.Rules
	// Policy is the error policy of every run; nil means seed 003's error table: fall back
	// along the coordinator's fallbacks, then to the diagnostic ("run diagnostic first").
	Policy *troupe.ErrorPolicy
	// Routed, if set, hears each routing decision of a message as it is made — the
	// coordinator's, then any fallback's — and always before the agent it routes to asks the
	// learner anything, so a transcript names the agent before its questions.
	Routed func(Route)
	// Replied, if set, hears each turn of a message as it finishes, before Send runs an
	// automatic one after it (feedback after a completed quiz).
	Replied func(Turn)
}

// Route is one routing decision of a message: the agent, and why (a fallback's reason names
// the agent that failed).
type Route struct {
	Agent  string
	Reason string
}

// Session is one learner's conversation with the tutor: each message is routed by seed 003's
// coordinator and run as one troupe run, with the session state carried from message to
// message. A Session is not safe for concurrent use: a conversation is one message at a time.
type Session struct {
	agents *Specialists
	coord  *route.Rules
	eng    *engine.Engine
	loop   *engine.Engine // plans the mastery loop instead of routing
	human  troupe.HumanHandler
	seed   uint64
	state  map[string]any
	turns  int

	routed  func(Route)
	replied func(Turn)
	mu      sync.Mutex // guards what follows: the agents' questions arrive on their goroutines
	cur     string     // the run of the message being answered
	seen    int64      // the last of its events told to routed
}

// Turn is one run of a message: where the coordinator sent it and what came back.
type Turn struct {
	Agent    string // the agent whose answer this is (a fallback's, when the target failed)
	Routed   string // the coordinator's target
	Rule     string // the routing row that fired ("default" when none)
	Reason   string // the coordinator's reason
	Fallback bool   // the answer came from a fallback agent
	Text     string
	Err      *troupe.ErrorInfo // the failure the reply explains, when the run failed
}

// Reply is the tutor's answer to one message: usually one turn, two when a completed quiz
// is followed by automatic feedback.
type Reply struct {
	Turns []Turn
}

// Text joins the turns' texts.
func (r Reply) Text() string {
	var parts []string
	for _, t := range r.Turns {
		parts = append(parts, t.Text)
	}
	return strings.Join(parts, "\n\n")
}

// NewSession builds a session and its engine.
func NewSession(cfg SessionConfig) (*Session, error) {
	a := NewSpecialists(cfg.Corpus, cfg.Specialists)
	reg, err := Registry(a)
	if err != nil {
		return nil, err
	}
	coord := cfg.Coordinator
	if coord == nil {
		coord = Coordinator()
	}
	if err := coord.Validate(reg); err != nil {
		return nil, fmt.Errorf("tutor: coordinator: %w", err)
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = 1
	}
	// Seed 003's error table: STATE_MISSING → run diagnostic first; TIMEOUT → retry or route
	// to the tutor (on_timeout on_error: a timeout is retried, then falls back, as an error
	// does). The coordinator's own fallbacks go first (tutor → diagnostic, the others →
	// tutor); the diagnostic is every other agent's last resort (ErrorPolicy.Validate refuses
	// an agent as its own fallback, as the config loader refuses it in troupe.yaml).
	policy := troupe.ErrorPolicy{OnError: troupe.Fallback, OnTimeout: troupe.TimeoutOnError, FallbackAgents: map[string][]string{}}
	for _, n := range Agents() {
		if n != "diagnostic" {
			policy.FallbackAgents[n] = []string{"diagnostic"}
		}
	}
	if cfg.Policy != nil {
		policy = *cfg.Policy
	}
	if err := policy.Validate(reg); err != nil {
		return nil, fmt.Errorf("tutor: error policy: %w", err)
	}
	eng, err := engine.New(engine.Config{Registry: reg, Planner: route.Planner(coord), Router: coord, Seed: seed, Policy: policy})
	if err != nil {
		return nil, fmt.Errorf("tutor: %w", err)
	}
	loop, err := engine.New(engine.Config{Registry: reg, Seed: seed, Planner: troupe.PlannerFunc(func(*troupe.Request, troupe.Catalog) (*troupe.Plan, error) {
		return &troupe.Plan{Stages: []troupe.PlanStage{{MaxConcurrency: 1, Tasks: []troupe.Task{
			{ID: "mastery", Agent: "mastery_loop", Reason: "seed 003's MasteryLoop: learning cycles until mastered", Priority: 1},
		}}}}, nil
	})})
	if err != nil {
		return nil, fmt.Errorf("tutor: %w", err)
	}
	s := &Session{agents: a, coord: coord, eng: eng, loop: loop, human: cfg.Human, seed: seed, state: map[string]any{}, routed: cfg.Routed, replied: cfg.Replied}
	if len(cfg.Goals) > 0 {
		s.state[KeyGoals] = slices.Clone(cfg.Goals)
	}
	if cfg.Routed != nil && cfg.Human != nil {
		// A question goes to the learner only after the decisions that led to its agent.
		s.human = troupe.HumanFunc(func(ctx context.Context, q troupe.Question) (troupe.Answer, error) {
			s.tellRoutes(ctx)
			return cfg.Human.Answer(ctx, q)
		})
	}
	return s, nil
}

// tellRoutes passes the current run's routing decisions not told yet to Routed, in order.
func (s *Session) tellRoutes(ctx context.Context) {
	if s.routed == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == "" {
		return
	}
	evs, err := s.eng.Store().Events(ctx, s.cur, s.seen)
	if err != nil {
		return
	}
	for _, ev := range evs {
		s.seen = ev.Seq
		d, ok := ev.Data.(*troupe.RoutingDecision)
		if !ok || ev.Kind != troupe.KindRouteDecided || ev.Parent != "" {
			continue
		}
		s.routed(Route{Agent: d.Target, Reason: d.Reason})
	}
}

// Close waits for the session's engines to stop.
func (s *Session) Close(ctx context.Context) error {
	return errors.Join(s.eng.Close(ctx), s.loop.Close(ctx))
}

// MasteryResult is seed 003's MasteryLoop output, with the loop's closing words.
type MasteryResult struct {
	FinalMastery    float64
	TotalCycles     int
	MasteryAchieved bool
	Recommendation  string // flow.ReasonMastered, flow.ReasonNeedsRemediation, or ReasonQuizPaused when the learner paused a quiz
	Text            string
}

// Master runs seed 003's MasteryLoop on topic: learning cycles (tutor → quiz → feedback, the
// quiz asking the session's Human) until the topic's mastery reaches the threshold or the
// cycles run out. The session state carries the loop's writes on, as after any message.
//
// A quiz the learner pauses (or leaves) ends the loop with Recommendation ReasonQuizPaused and
// a Text that says so; the quiz stays paused in the session state, so "continue quiz" resumes
// it. FinalMastery is then the topic's mastery as the earlier cycles left it.
func (s *Session) Master(ctx context.Context, topic string) (MasteryResult, error) {
	k, ok := s.agents.corpus.Concept(topic)
	if !ok {
		return MasteryResult{}, fmt.Errorf("tutor: master: unknown topic %q (known: %s)", topic, strings.Join(s.agents.topicNames(), ", "))
	}
	state := maps.Clone(s.state)
	state[KeyCurrentTopic] = k.ID
	state[KeyQuizPaused] = false
	run, err := s.loop.Start(ctx, troupe.Request{Query: "master " + k.ID, State: state, Human: s.human,
		SessionID: fmt.Sprintf("tutor-%d", s.seed), UserContext: map[string]any{"seed": s.seed}})
	if err != nil {
		return MasteryResult{}, fmt.Errorf("tutor: master: %w", err)
	}
	st, err := run.Wait(ctx)
	if err != nil {
		return MasteryResult{}, fmt.Errorf("tutor: master %s: %w", k.ID, err)
	}
	res := st.CompletedAgents["mastery_loop"]
	if res == nil {
		return MasteryResult{}, fmt.Errorf("tutor: master %s: the loop left no result", k.ID)
	}
	s.state = st.SessionState
	s.state[KeyLastRoutedTo] = "mastery_loop"
	out := MasteryResult{}
	ar := res.AgentResult
	out.FinalMastery, _ = ar[KeyMasteryScore].(float64)
	out.MasteryAchieved, _ = ar[KeyMasteryAchieved].(bool)
	out.TotalCycles, _ = ar["total_cycles"].(int)
	out.Recommendation, _ = ar["escalation_reason"].(string)
	if out.Recommendation == ReasonQuizPaused {
		var items []quizItem
		var responses []response
		decode(ar[KeyQuizQuestions], &items)
		decode(ar[KeyQuizResponses], &responses)
		mastery := map[string]float64{}
		decode(s.state[KeyMastery], &mastery)
		m, known := mastery[k.ID]
		out.FinalMastery, out.MasteryAchieved = m, false
		var b strings.Builder
		fmt.Fprintf(&b, "Mastery work on %s stopped in cycle %d: the quiz is paused after %d of %d questions, nothing graded yet", k.Name, out.TotalCycles, len(responses), len(items))
		if known {
			fmt.Fprintf(&b, "; your mastery stays %.2f", m)
		}
		fmt.Fprintf(&b, ".\nSay \"continue quiz\" to pick it up where you left off, or \"/master %s\" to start the mastery loop over with a new quiz.", k.ID)
		out.Text = b.String()
		return out, nil
	}
	fb, _ := ar["feedback_text"].(string)
	out.Text = fmt.Sprintf("%d learning cycle(s) on %s: mastery %.2f — %s.\n%s", out.TotalCycles, k.Name, out.FinalMastery, strings.ReplaceAll(out.Recommendation, "_", " "), fb)
	return out, nil
}

// State returns a copy of the session state.
func (s *Session) State() map[string]any { return maps.Clone(s.state) }

// Corpus returns the session's corpus.
func (s *Session) Corpus() *Corpus { return s.agents.corpus }

// Send routes msg, runs the agent it is routed to and returns its reply. Then, while a row of
// the coordinator's table with no message condition fires on the new state — seed 003's "after
// quiz completion", which is automatic — it runs that row too (at most twice), so feedback
// follows a completed quiz in the same reply. The error is non-nil only when the run could not
// be recorded or ctx ended; an agent's failure is explained in the reply, per seed 003's
// fallback actions.
func (s *Session) Send(ctx context.Context, msg string) (Reply, error) {
	var r Reply
	for i := range 3 { // the message, then at most two automatic turns
		if i > 0 {
			if !s.automatic(ctx) {
				break
			}
			msg = ""
		}
		t, err := s.turn(ctx, msg)
		if err != nil {
			return r, err
		}
		r.Turns = append(r.Turns, t)
		if s.replied != nil {
			s.replied(t)
		}
	}
	return r, nil
}

// automatic reports whether a trigger without patterns fires on the current state: one that
// needs no message from the learner.
func (s *Session) automatic(ctx context.Context) bool {
	d, err := s.coord.Route(ctx, troupe.RouteInput{State: s.state, Available: s.eng.Registry().Names()}, troupe.NewContext("tutor", ""))
	if err != nil || d.Metadata["source"] != "trigger" {
		return false
	}
	i, ok := d.Metadata["rule_index"].(int)
	return ok && i < len(s.coord.Triggers) && len(s.coord.Triggers[i].Patterns) == 0
}

// turn runs one message and carries its state forward.
func (s *Session) turn(ctx context.Context, msg string) (Turn, error) {
	s.turns++
	req := troupe.Request{
		Query: msg, State: maps.Clone(s.state), Human: s.human,
		// The run's id is known before it starts: its agents may ask (and tellRoutes read its
		// log) before Start returns.
		RunID:       fmt.Sprintf("run_tutor_%d_%d", s.seed, s.turns),
		SessionID:   fmt.Sprintf("tutor-%d", s.seed),
		UserContext: map[string]any{"seed": s.seed},
	}
	s.mu.Lock()
	s.cur, s.seen = req.RunID, 0
	s.mu.Unlock()
	defer s.tellRoutes(context.WithoutCancel(ctx)) // the decisions of a turn that asked nothing
	run, err := s.eng.Start(ctx, req)
	if err != nil {
		return Turn{}, fmt.Errorf("tutor: message %d: %w", s.turns, err)
	}
	st, werr := run.Wait(ctx)
	if werr != nil && ctx.Err() != nil {
		return Turn{}, fmt.Errorf("tutor: message %d: %w", s.turns, ctx.Err())
	}
	evs, err := s.eng.Store().Events(ctx, run.ID(), 0)
	if err != nil {
		return Turn{}, fmt.Errorf("tutor: message %d: %w", s.turns, err)
	}
	var t Turn
	var failures []troupe.ErrorInfo
	var last *troupe.Result
	for _, ev := range evs {
		switch ev.Kind {
		case troupe.KindRouteDecided:
			d := ev.Data.(*troupe.RoutingDecision)
			if t.Routed == "" {
				t.Routed, t.Reason = d.Target, d.Reason
				t.Rule, _ = d.Metadata["rule"].(string)
				if t.Rule == "" {
					t.Rule, _ = d.Metadata["source"].(string)
				}
			} else {
				t.Fallback = true
			}
		case troupe.KindDispatchCompleted:
			last = ev.Data.(*troupe.Result)
		case troupe.KindDispatchFailed:
			failures = append(failures, ev.Data.(*troupe.Result).Errors...)
		case troupe.KindRunPaused:
			t.Text = "The quiz is waiting for an answer; nobody is here to give it."
		}
	}
	if st.SessionState != nil {
		s.state = st.SessionState
	}
	switch {
	case last != nil:
		t.Agent, t.Text = last.AgentName, last.Summary()
	case t.Text == "":
		t.Agent = t.Routed
		e := explain(failures)
		t.Err, t.Text = &e, fallbackText(e, s.agents)
	}
	if t.Agent != "" {
		s.state[KeyLastRoutedTo] = t.Agent
	}
	return t, nil
}

// explain picks the failure a reply should answer: the learner can act on INVALID_INPUT and
// RAG_EMPTY, so they win over STATE_MISSING, which wins over the rest.
func explain(failures []troupe.ErrorInfo) troupe.ErrorInfo {
	rank := map[string]int{troupe.CodeInvalidInput: 0, troupe.CodeRAGEmpty: 1, troupe.CodeStateMissing: 2}
	best := troupe.ErrorInfo{Code: troupe.CodeAgentError, Message: "no agent could answer"}
	bestRank := 99
	for _, f := range failures {
		r, ok := rank[f.Code]
		if !ok {
			r = 3
		}
		if r < bestRank {
			best, bestRank = f, r
		}
	}
	return best
}

// fallbackText is seed 003's fallback column as words for the learner.
func fallbackText(e troupe.ErrorInfo, a *Specialists) string {
	switch e.Code {
	case troupe.CodeInvalidInput:
		return "Which topic would you like to learn? I can teach: " + strings.Join(a.topicNames(), ", ") + ". Say \"teach me <topic>\"."
	case troupe.CodeRAGEmpty:
		return "I have no material on that. Related topics you could start with: " + strings.Join(a.ready(nil), ", ") + "."
	case troupe.CodeStateMissing:
		return "Let's run the diagnostic first: say \"teach me <topic>\" (" + strings.Join(a.topicNames(), ", ") + ")."
	case troupe.CodeTimeout:
		return "That took too long; ask me again, or ask me to explain the topic."
	}
	return "Something went wrong: " + e.Message
}
