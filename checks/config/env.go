// Package config holds the configuration checks of doctor (LA001, LA101-LA107): they judge the
// discovered Setup, one read of the API, and never talk to the network.
package config

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/lanaccess/kubectl-lanaccess/checks/catalogue"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/noderead"
)

// Env is what the configuration checks read.
type Env struct {
	Setup *kube.Setup
	// Access answers LA001's permission questions.
	Access Reviewer
	// HelperNamespace is where LA201 creates helper pods (LA001 asks for that permission
	// there); NoHelpers means it will not.
	HelperNamespace string
	NoHelpers       bool
	// Reader reads the addresses the nodes really have (LA101: an address on a node's second
	// interface is the node's); nil or Unavailable: only status.addresses are known.
	Reader *noderead.NodeNetReader
}

// Reviewer asks the API server whether the current user may do something.
type Reviewer interface {
	Review(ctx context.Context, q kube.AccessQuestion) (kube.Access, error)
}

// Checks returns the configuration checks in catalogue order.
func Checks(env *Env) []engine.Check {
	return []engine.Check{
		AccessAndPermissions(env),
		AddressConsistency(env),
		ProxyService(env),
		DNSService(env),
		CorefileConfig(env),
		DNSDeployment(env),
		ExternalIPsSecurity(env),
		Audience(env),
	}
}

// check builds the catalogue entry id around a judge of the Setup: every configuration check
// but LA001 needs the two Services, so a missing setup is said once here.
// unreadOf says why reads the catalogue entry of check id declares failed in discovery (those
// of the setup's namespaces in ns): "" when all were read. The keys come from the declarations,
// so a check names exactly what it reads.
func unreadOf(s *kube.Setup, id, ns string) string {
	return s.UnreadReason(catalogue.Get(id).ReadKeys(ns)...)
}

// serviceUnread is unreadOf for LA102 and LA103: they read the nodes only for a Service with
// externalTrafficPolicy Local (localPolicyFindings), so nodes that were not read leave a
// Cluster Service fully judged.
func serviceUnread(s *kube.Setup, id string, svc *corev1.Service) string {
	keys := catalogue.Get(id).ReadKeys(svc.Namespace)
	if svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal {
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == kube.ReadKey("", "nodes", "") })
	}
	return s.UnreadReason(keys...)
}

func check(env *Env, id string, judge func(*kube.Setup) engine.Outcome) engine.Check {
	return checkCtx(env, id, func(_ context.Context, s *kube.Setup) engine.Outcome { return judge(s) })
}

// checkCtx is check for a judge that also reads the nodes (bounded by the check's context).
func checkCtx(env *Env, id string, judge func(context.Context, *kube.Setup) engine.Outcome) engine.Check {
	return catalogue.Check(id, func(ctx context.Context) engine.Outcome {
		if env.Setup == nil || env.Setup.ProxyService == nil || env.Setup.DNSService == nil {
			// A wiring fault of the caller, not a property of the cluster.
			return engine.Outcome{Skip: "the setup was not discovered (name the Services with --proxy-service and --dns-service)"}
		}
		return judge(ctx, env.Setup)
	})
}
