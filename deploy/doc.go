// Package deploy only holds the checks of the deployment files at the repository root,
// docker-compose.yml and Dockerfile (deploy_test.go), so that `go test ./...` and
// `make test` run them. It has no code of its own.
package deploy
