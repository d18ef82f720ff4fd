package faults

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/daemon"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/podruntime"
)

// SetForwardAuthLocation makes the lab's proxy answer the forward-auth routes of Ingress
// namespace/name with a 302 to loc instead of the identity provider ("" restores the identity
// provider's answer), through the lab's annotation podruntime.ForwardAuthLocationAnnotation, and
// waits until the pod runtime has given the proxy its new configuration. It stands for an auth
// server whose answer Traefik passes on as loc: with an auth server that writes a path and a
// forwardAuth address on a cluster name, Traefik gives the browser a URL on that name
// (testdata/oracle/traefik). It returns the previous value ("" when there was none).
func (f Lab) SetForwardAuthLocation(ctx context.Context, namespace, name, loc string) (string, error) {
	if loc != "" && !podruntime.PlainLocation(loc) {
		return "", fmt.Errorf("location %q: the lab's proxy takes only plain URL characters", loc)
	}
	ings := f.Client.NetworkingV1().Ingresses(namespace)
	ing, err := ings.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("ingress %s/%s: %w", namespace, name, err)
	}
	prev := ing.Annotations[podruntime.ForwardAuthLocationAnnotation]
	switch {
	case loc == "":
		delete(ing.Annotations, podruntime.ForwardAuthLocationAnnotation)
	case ing.Annotations == nil:
		ing.Annotations = map[string]string{podruntime.ForwardAuthLocationAnnotation: loc}
	default:
		ing.Annotations[podruntime.ForwardAuthLocationAnnotation] = loc
	}
	ing, err = ings.Update(ctx, ing, metav1.UpdateOptions{})
	if err != nil {
		return prev, fmt.Errorf("update ingress %s/%s: %w", namespace, name, err)
	}
	return prev, f.WaitSynced(ctx, daemon.SyncRuntime, "ingresses", ing.ResourceVersion)
}
