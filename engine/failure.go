package engine

import "github.com/troupehq/troupe"

// runFailure is why a run failed, as the Cause of the *troupe.OrchestrationError Wait returns:
// its text is the failure's message (which the OrchestrationError's message already holds, so
// it is not said twice), and errors.Is and errors.As find the errors behind it.
type runFailure struct {
	msg  string
	errs []error
}

func (f *runFailure) Error() string   { return f.msg }
func (f *runFailure) Unwrap() []error { return f.errs }

// resultErr turns an error a dispatch's result recorded back into an error: an
// *troupe.AgentError with the recorded code, message, recoverability and details, whose cause
// is the sentinel of the code (troupe.ErrTimeout for TIMEOUT, troupe.ErrBlocked for BLOCKED,
// ...). A result keeps its errors as ErrorInfo, which is all a run resumed from its log has of
// them; a live run rebuilds them the same way, so both fail with the same cause.
func resultErr(info troupe.ErrorInfo) error {
	return &troupe.AgentError{Code: info.Code, Message: info.Message, Recoverable: info.Recoverable,
		FallbackAction: info.FallbackAction, Details: info.Details, Cause: codeSentinel(info.Code)}
}

// codeSentinel is the sentinel error of an error code, or nil for codes without one.
func codeSentinel(code string) error {
	switch code {
	case troupe.CodeTimeout:
		return troupe.ErrTimeout
	case troupe.CodeBlocked:
		return troupe.ErrBlocked
	case troupe.CodeCancelled:
		return troupe.ErrCancelled
	case troupe.CodeBudget:
		return troupe.ErrBudgetExhausted
	case troupe.CodeUnknownAgent:
		return troupe.ErrUnknownAgent
	case troupe.CodeInvalidOutput:
		return troupe.ErrInvalidResult
	case troupe.CodeInvalidRequest:
		return troupe.ErrInvalidDispatch
	}
	return nil
}
