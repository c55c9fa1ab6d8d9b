package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// Every command's runs must leave no goroutine behind. With TROUPE_TEST_MAIN=1 the test
// binary is the troupe command instead, so that tests can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("TROUPE_TEST_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}
