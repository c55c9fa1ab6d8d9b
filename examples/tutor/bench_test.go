package tutor_test

import (
	"context"
	"testing"
)

// BenchmarkSend measures one message of a conversation: routing by the coordinator, one
// engine run of the tutor over the corpus, and carrying the state on.
func BenchmarkSend(b *testing.B) {
	benchMessage(b, "how does a common denominator work?")
}

// BenchmarkQuizAndFeedback measures a five-question quiz answered by a scripted learner and
// the automatic feedback turn after it.
func BenchmarkQuizAndFeedback(b *testing.B) {
	benchMessage(b, "quiz me")
}

// benchMessage sends msg over and over in a session where the diagnostic has run on
// fractions and the learner answers every question right.
func benchMessage(b *testing.B, msg string) {
	s, l := newSession(b, 1)
	l.set("right")
	if _, err := s.Send(context.Background(), "teach me fractions"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Send(context.Background(), msg); err != nil {
			b.Fatal(err)
		}
	}
}
