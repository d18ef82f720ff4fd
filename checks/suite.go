package checks

import "github.com/lanaccess/kubectl-lanaccess/pkg/engine"

// DoctorSuite is the doctor catalogue in order (DESIGN.md section 4): configuration from the
// API, node listeners through exec, then the DNS and HTTPS paths as a workstation sees them.
func DoctorSuite(env *Env) []engine.Check {
	return []engine.Check{
		AccessAndPermissions(env),
		AddressConsistency(env),
		ProxyService(env),
		DNSService(env),
		CorefileConfig(env),
		DNSDeployment(env),
		ExternalIPsSecurity(env),
		Audience(env),
		NodeListeners(env),
		DNSAnswers(env),
		AAAANoData(env),
		Forwarding(env),
		NoClusterLeak(env),
		HTTPSAnswer(env),
		SamePathAnswer(env),
		LinkQuality(env),
	}
}
