package labctl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lanaccess/kubectl-lanaccess/lab/internal/layout"
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/netns"
)

// Status prints what is running; it returns an error when the lab is not healthy.
func Status(ctx context.Context, l layout.Layout, out io.Writer) error {
	st, err := LoadState(l)
	if err != nil {
		names, _ := netns.List(ctx)
		fmt.Fprintf(out, "lab is down (%v); network namespaces present: %s\n", err, strings.Join(names, " "))
		return err
	}
	fmt.Fprintf(out, "state dir:  %s (created %s, last bring-up %s)\n", l.StateDir, st.CreatedAt.Format("2006-01-02 15:04:05"), st.UpDuration)
	fmt.Fprintf(out, "kubeconfig: %s\nCA file:    %s\n\n", l.AdminKubeconfig(), l.CAFile())
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "PROCESS\tPID\tSTATE")
	mgr := Procs(l)
	exp := expected(l, st)
	names := make([]string, 0, len(exp))
	for n := range exp {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pid, ok := mgr.Pid(n, exp[n])
		state := "running"
		if !ok {
			state, pid = "NOT RUNNING", 0
		}
		fmt.Fprintf(w, "%s\t%d\t%s\n", n, pid, state)
	}
	w.Flush()
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tLAN ADDRESS\tPRESENT")
	for _, h := range l.Hosts() {
		ok, _ := netns.Exists(ctx, h.NS)
		fmt.Fprintf(w, "%s\t%s\t%v\n", h.NS, h.LANIP, ok)
	}
	w.Flush()
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err == nil {
		var client *kubernetes.Clientset
		if client, err = kubernetes.NewForConfig(cfg); err == nil {
			err = printCluster(ctx, client, out)
		}
	}
	if err != nil {
		fmt.Fprintf(out, "\ncluster: %v\n", err)
	}
	return Healthy(ctx, l)
}

func printCluster(ctx context.Context, c kubernetes.Interface, out io.Writer) error {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tREADY\tPOD CIDR")
	for i := range nodes.Items {
		n := &nodes.Items[i]
		fmt.Fprintf(w, "%s\t%v\t%s\n", n.Name, NodeReady(n), n.Spec.PodCIDR)
	}
	w.Flush()
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "POD\tNODE\tIP\tPHASE")
	for _, p := range pods.Items {
		fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\n", p.Namespace, p.Name, p.Spec.NodeName, p.Status.PodIP, p.Status.Phase)
	}
	return w.Flush()
}
