package tutor_test

import (
	"context"
	"testing"
)

// BenchmarkSend measures one message of a conversation: routing by the coordinator, one
// engine run of the tutor over the corpus, and carrying the state on.
func BenchmarkSend(b *testing.B) {
	s, l := newSession(b, 1)
	l.set("right")
	if _, err := s.Send(context.Background(), "teach me fractions"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Send(context.Background(), "how does a common denominator work?"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQuizAndFeedback measures a five-question quiz answered by a scripted learner and
// the automatic feedback turn after it.
func BenchmarkQuizAndFeedback(b *testing.B) {
	s, l := newSession(b, 1)
	l.set("right")
	if _, err := s.Send(context.Background(), "teach me fractions"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Send(context.Background(), "quiz me"); err != nil {
			b.Fatal(err)
		}
	}
}
