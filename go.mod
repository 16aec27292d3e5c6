module github.com/run-js-server/run-js-server

go 1.26.0

require (
	github.com/buke/quickjs-go v0.7.7 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
