module github.com/troupehq/troupe

go 1.26.0

require github.com/google/go-cmp v0.7.0

require go.uber.org/goleak v1.3.0
