package faults

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/procs"
)

func (f Lab) faultProcs() procs.Manager {
	return procs.Manager{PidDir: f.Layout.Path("faults"), LogDir: f.Layout.Path("faults")}
}

// ListenerName is the process name of a listener fault.
func ListenerName(host string, port int, proto string) string {
	return fmt.Sprintf("listener-%s-%d-%s", host, port, proto)
}

// StartListener starts a real process in host's namespace bound on addr:port/proto (addr ""
// = the host's LAN address, "0.0.0.0" = wildcard) and waits until the socket is bound.
func (f Lab) StartListener(ctx context.Context, host, addr string, port int, proto string) (string, error) {
	h, err := f.host(host)
	if err != nil {
		return "", err
	}
	if addr == "" {
		addr = h.LANIP
	}
	if proto != "tcp" && proto != "udp" {
		return "", fmt.Errorf("protocol %q: want tcp or udp", proto)
	}
	name := ListenerName(host, port, proto)
	bind := addr + ":" + strconv.Itoa(port)
	if _, _, err := f.faultProcs().Start(procs.Spec{Name: name, NS: h.NS,
		Argv: []string{f.Layout.LabBinary(), "listen", "--addr", bind, "--proto", proto}}); err != nil {
		return "", err
	}
	flag := "-Hltn"
	if proto == "udp" {
		flag = "-Hlun"
	}
	err = poll(ctx, 5*time.Second, func() error {
		if _, ok := f.faultProcs().Pid(name, "listen --addr "+bind); !ok {
			return fmt.Errorf("listener %s exited (log %s)", name, f.faultProcs().LogFile(name))
		}
		out, err := netns.Run(ctx, h.NS, "ss", flag, "src", bind)
		if err != nil {
			return err
		}
		if !strings.Contains(out, bind) {
			return fmt.Errorf("%s not bound yet", bind)
		}
		return nil
	})
	if err != nil {
		_ = f.StopProcess(ctx, name)
		return "", err
	}
	return name, nil
}

// StopProcess ends a fault process started by StartListener or SetLatency.
func (f Lab) StopProcess(ctx context.Context, name string) error {
	return f.faultProcs().Stop(ctx, name, f.Layout.LabBinary())
}

// latencyQueue gives each host its own NFQUEUE number.
func (f Lab) latencyQueue(host string) (int, error) {
	for i, h := range f.Layout.Hosts() {
		if h.NS == host {
			return 100 + i, nil
		}
	}
	return 0, fmt.Errorf("no lab host named %q", host)
}

const latencyComment = "lab-fault:latency"

// SetLatency delays every packet a host sends on its LAN link by d (0 removes the delay). The
// kernel has no netem, so packets go through an NFQUEUE whose reader holds each one for d
// (--queue-bypass: if the reader dies, packets flow again without delay).
func (f Lab) SetLatency(ctx context.Context, host string, d time.Duration) error {
	h, err := f.host(host)
	if err != nil {
		return err
	}
	q, err := f.latencyQueue(host)
	if err != nil {
		return err
	}
	name := "latency-" + host
	rule := []string{"POSTROUTING", "-o", "eth0", "-m", "comment", "--comment", latencyComment,
		"-j", "NFQUEUE", "--queue-num", strconv.Itoa(q), "--queue-bypass"}
	// Remove any previous delay first: one delay per host.
	for {
		if _, err := netns.Run(ctx, h.NS, append([]string{"iptables", "-t", "mangle", "-D"}, rule...)...); err != nil {
			break
		}
	}
	if err := f.StopProcess(ctx, name); err != nil {
		return err
	}
	if d == 0 {
		return nil
	}
	if _, _, err := f.faultProcs().Start(procs.Spec{Name: name, NS: h.NS,
		Argv: []string{f.Layout.LabBinary(), "delay", "--queue", strconv.Itoa(q), "--delay", d.String()}}); err != nil {
		return err
	}
	// Give the reader a moment to bind the queue; with --queue-bypass an unbound queue would
	// silently pass packets undelayed.
	time.Sleep(200 * time.Millisecond)
	if _, ok := f.faultProcs().Pid(name, "delay --queue"); !ok {
		return fmt.Errorf("latency reader for %s exited (log %s)", host, f.faultProcs().LogFile(name))
	}
	_, err = netns.Run(ctx, h.NS, append([]string{"iptables", "-t", "mangle", "-A"}, rule...)...)
	return err
}

func (f Lab) host(name string) (layout.Host, error) {
	for _, h := range f.Layout.Hosts() {
		if h.NS == name {
			return h, nil
		}
	}
	return layout.Host{}, fmt.Errorf("no lab host named %q", name)
}
