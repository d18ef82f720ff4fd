package kube

import "math"

// PortNumber is a Service or container port (int32 in the API) as a port number. The API server
// admits 1..65535 only, for a Service's port as for a container's containerPort and hostPort (0 =
// no host port) (kubernetes pkg/apis/core/validation/validation.go: validateServicePort and
// validateContainerPorts call IsValidPortNum), so ok is false only for a port that is unset or
// did not come through the API server (a fixture, a hostile object): the caller skips it rather
// than wrapping it onto another port.
func PortNumber(port int32) (n uint16, ok bool) {
	if port < 1 || port > math.MaxUint16 {
		return 0, false
	}
	return uint16(port), true
}
