// Package ext is Traefik's dynamic-configuration extension point: Traefik's own go.mod replaces
// the module github.com/traefik/traefik/dynamic/ext with a directory of its repository that is
// not part of the v3 module's zip on the module proxy, so a build from the proxy must give it.
// Traefik's open-source build extends nothing: both types are empty structs there too
// (traefik/traefik v3.7.9 pkg/config/dynamic/ext).
package ext

// HTTP extends dynamic.HTTP (nothing in Traefik's open-source build).
type HTTP struct{}

// Router extends dynamic.Router (nothing in Traefik's open-source build).
type Router struct{}
