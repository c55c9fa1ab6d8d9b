package main

import (
	"testing"

	"go.uber.org/goleak"
)

// Every command's runs must leave no goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
