package labctl

import (
	"context"
	"errors"
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
	"github.com/lanaccess/kubectl-lanaccess/lab/internal/textout"
)

// Status prints what is running; it returns an error when the lab is not healthy.
func Status(ctx context.Context, l layout.Layout, out io.Writer) error {
	p := &textout.Printer{}
	st, err := LoadState(l)
	if err != nil {
		names, _ := netns.List(ctx)
		p.Printf(out, "lab is down (%v); network namespaces present: %s\n", err, strings.Join(names, " "))
		return joinWriteErr(err, p.Err)
	}
	p.Printf(out, "state dir:  %s (created %s, last bring-up %s)\n", l.StateDir, st.CreatedAt.Format("2006-01-02 15:04:05"), st.UpDuration)
	p.Printf(out, "kubeconfig: %s\nCA file:    %s\n\n", l.AdminKubeconfig(), l.CAFile())
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p.Println(w, "PROCESS\tPID\tSTATE")
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
		p.Printf(w, "%s\t%d\t%s\n", n, pid, state)
	}
	p.Flush(w)
	p.Println(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p.Println(w, "NAMESPACE\tLAN ADDRESS\tPRESENT")
	for _, h := range l.Hosts() {
		ok, _ := netns.Exists(ctx, h.NS)
		p.Printf(w, "%s\t%s\t%v\n", h.NS, h.LANIP, ok)
	}
	p.Flush(w)
	p.Printf(out, "\n%s\n", workstationStatus(ctx, l))
	cfg, err := clientcmd.BuildConfigFromFlags("", l.AdminKubeconfig())
	if err == nil {
		var client *kubernetes.Clientset
		if client, err = kubernetes.NewForConfig(cfg); err == nil {
			err = printCluster(ctx, client, out, p)
		}
	}
	if err != nil {
		p.Printf(out, "\ncluster: %v\n", err)
	}
	return joinWriteErr(Healthy(ctx, l), p.Err)
}

// printCluster prints the nodes and pods through p, which keeps any write error; it returns
// the API's errors.
func printCluster(ctx context.Context, c kubernetes.Interface, out io.Writer, p *textout.Printer) error {
	nodes, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	p.Println(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p.Println(w, "NODE\tREADY\tPOD CIDR")
	for i := range nodes.Items {
		n := &nodes.Items[i]
		p.Printf(w, "%s\t%v\t%s\n", n.Name, NodeReady(n), n.Spec.PodCIDR)
	}
	p.Flush(w)
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	p.Println(out)
	w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p.Println(w, "POD\tNODE\tIP\tPHASE")
	for _, pod := range pods.Items {
		p.Printf(w, "%s/%s\t%s\t%s\t%s\n", pod.Namespace, pod.Name, pod.Spec.NodeName, pod.Status.PodIP, pod.Status.Phase)
	}
	p.Flush(w)
	return nil
}

// joinWriteErr returns err as it is when every write succeeded, else err together with the
// write error.
func joinWriteErr(err, werr error) error {
	if werr == nil {
		return err
	}
	return errors.Join(err, fmt.Errorf("writing the status: %w", werr))
}
