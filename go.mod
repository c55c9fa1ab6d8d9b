module github.com/troupehq/troupe

go 1.26
