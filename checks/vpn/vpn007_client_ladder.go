package vpn

import (
	"github.com/lanaccess/kubectl-lanaccess/checks/vpn/facts"
	"github.com/lanaccess/kubectl-lanaccess/pkg/engine"
)

// VPNClientLadder is VPN007: the same ladder from this machine, through the tunnel, when it is
// connected (--from-client). These packets are forwarded by the VPN pod, so this ladder is the
// one that sees forwarding and the return path.
func VPNClientLadder(env *Env) engine.Check {
	return judged(env, "VPN007", facts.NeedClientLadder, judgeClientLadder)
}

func judgeClientLadder(run *facts.Run) engine.Outcome {
	cl := run.Client
	switch {
	case run.ClientErr != nil:
		return engine.Outcome{Err: run.ClientErr}
	case !cl.Walked():
		return engine.Outcome{Skip: cl.Skip}
	}
	return engine.Outcome{Findings: ladderFindings("VPN007", "this machine ("+cl.Local.String()+")", cl.Ladder, &cl.Routes)}
}
