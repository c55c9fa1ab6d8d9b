package engine

// runFailure is why a run failed, as the Cause of the *troupe.OrchestrationError Wait returns:
// its text is the failure's message (which the OrchestrationError's message already holds, so
// it is not said twice), and errors.Is and errors.As find the errors behind it.
type runFailure struct {
	msg  string
	errs []error
}

func (f *runFailure) Error() string   { return f.msg }
func (f *runFailure) Unwrap() []error { return f.errs }
