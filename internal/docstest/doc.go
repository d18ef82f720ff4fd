// Package docstest holds the tests of the prose docs (README.md, CONTRIBUTING.md, docs/): every
// relative link leads to a file and a heading that exist, and the README's examples are the
// command pages' own. The generated pages have tests of their own beside their generators
// (checks/catalogue, cmd/kubectl-lanaccess/internal/cli); `make docs` rewrites those.
package docstest
