package checks

import "github.com/lanaccess/kubectl-lanaccess/pkg/engine"

// VPNTraceSuite is the vpn-trace catalogue in order (DESIGN 5).
func VPNTraceSuite(env *Env) []engine.Check {
	return []engine.Check{
		VPNFindPods(env),
		VPNForwarding(env),
		VPNDurability(env),
		VPNTunnel(env),
		VPNReturnPath(env),
		VPNPodLadder(env),
		VPNClientLadder(env),
		VPNVerdict(env),
	}
}
