package facts

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client/clientgo"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/podexec"
)

// deadlineExec records how much time each command was given.
type deadlineExec struct {
	mu    sync.Mutex
	given []time.Duration
}

func (d *deadlineExec) Exec(ctx context.Context, _ podexec.PodRef, _ string, _ []string, _ io.Reader) ([]byte, []byte, error) {
	dl, ok := ctx.Deadline()
	d.mu.Lock()
	defer d.mu.Unlock()
	if ok {
		d.given = append(d.given, time.Until(dl))
	}
	return []byte("1\n"), nil, nil
}

// --exec-timeout reaches every command vpn-trace runs in a pod (it was accepted and unused:
// the commands kept a fixed 15 s, issue 23).
func TestExecTimeoutBoundsEveryCommandInAPod(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "vpn", Name: "openvpn-0"},
		Spec:       corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "openvpn", Image: "kylemanna/openvpn:2.4"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", ContainerStatuses: []corev1.ContainerStatus{
			{Name: "openvpn", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		}},
	}
	for _, tc := range []struct {
		name string
		opt  time.Duration
		want time.Duration
	}{
		{"the flag's value", 3 * time.Second, 3 * time.Second},
		{"the default without it", 0, defaultExecTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := &deadlineExec{}
			g := New(Seams{Client: clientgo.Wrap(fake.NewClientset(pod)), Exec: ex}, Options{ExecTimeout: tc.opt})
			_, err := g.Gather(t.Context(), NeedForwarding)
			require.NoError(t, err)
			require.NotEmpty(t, ex.given, "a command ran in the pod")
			for _, d := range ex.given {
				assert.InDelta(t, tc.want.Seconds(), d.Seconds(), 1, "each command's deadline")
			}
		})
	}
}
