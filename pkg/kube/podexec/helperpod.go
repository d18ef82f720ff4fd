package podexec

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/kubeobj"
	"github.com/lanaccess/kubectl-lanaccess/pkg/remedy"
)

// Labels on everything the plugin creates, so that `cleanup` finds what a killed run left.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kubectl-lanaccess"
	RunIDLabel     = "kubectl-lanaccess/run-id"
	// NodeAnnotation records the node a helper reads (node names may be too long for a label).
	NodeAnnotation = "kubectl-lanaccess/node"
)

// DefaultHelperNamespace is the namespace the helper bundle of `kubectl lanaccess manifests`
// creates: Pod Security privileged (hostNetwork needs it) and narrowed by a
// ValidatingAdmissionPolicy that admits only the helper's pod shape.
const DefaultHelperNamespace = "lanaccess-helpers"

// HelperOwnersLabel on the helper namespace, with the value HelperOwnersAllowed, is how a
// cluster administrator lets its admission policy admit the owner-naming helper (hostPID, uid
// 0, CAP_SYS_PTRACE: node root). Only who may update namespaces can set it.
const (
	HelperOwnersLabel   = "kubectl-lanaccess/helper-owners"
	HelperOwnersAllowed = "allowed"
)

// HelperImageDigest pins the helper image's content: the OCI index of docker.io's
// library/busybox:1.36.1 (sh, cat, ls, grep, tr, sleep), as recorded by independent public
// records of the tag (the last of its rebuilds; it was not checked against the registry from
// here, which cannot reach it). A mirror that copies the image keeps the digest, so --image
// REGISTRY/busybox@HelperImageDigest is admitted by the helper namespace's policy too.
const HelperImageDigest = "sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662"

// DefaultHelperImage is the helper's image, pinned by digest: the tag is kept for people to
// read, the runtime pulls the digest. --image replaces it for air-gapped registries.
const DefaultHelperImage = "docker.io/library/busybox:1.36.1@" + HelperImageDigest

// The helper's user when it only reads socket tables: busybox's nobody.
const helperUID = 65534

// HelperConfig describes the helper pods of one run.
type HelperConfig struct {
	// Namespace receives the helper pods; it must admit hostNetwork pods (Pod Security level
	// privileged). Default DefaultHelperNamespace.
	Namespace string
	// Image of the helper; default DefaultHelperImage.
	Image string
	// NameOwners makes the helper able to name the process holding a socket (see HelperPod):
	// the node's PID namespace, uid 0, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH. Off, the
	// helper reads the socket tables only, as nobody with no capability.
	NameOwners bool
	// RunID labels this run's pods; default a random one.
	RunID string
	// ActiveDeadline is enforced by the kubelet, so a helper dies even if this process is
	// killed before it can delete it. Default 5 minutes.
	ActiveDeadline time.Duration
	// StartTimeout bounds the wait for the helper to run. Default 90 seconds.
	StartTimeout time.Duration
	// PollInterval between status reads while waiting. Default 500 ms.
	PollInterval time.Duration
	// ExistingPodAttempts bounds how many pods of trusted system DaemonSets are tried per node
	// before a helper is created. Default 2.
	ExistingPodAttempts int
}

func (c HelperConfig) withDefaults() HelperConfig {
	if c.Namespace == "" {
		c.Namespace = DefaultHelperNamespace
	}
	if c.Image == "" {
		c.Image = DefaultHelperImage
	}
	if c.RunID == "" {
		c.RunID = NewRunID()
	}
	if c.ActiveDeadline <= 0 {
		c.ActiveDeadline = 5 * time.Minute
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 90 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 500 * time.Millisecond
	}
	if c.ExistingPodAttempts <= 0 {
		c.ExistingPodAttempts = 2
	}
	return c
}

// NewRunID returns a short random identifier for one run's objects.
func NewRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// HelperCause says why no shell could be had on a node; checks map it to SKIP or ERROR.
type HelperCause string

const (
	CauseNodeNotReady HelperCause = "node-not-ready"
	CauseForbidden    HelperCause = "rbac"
	CauseNoNamespace  HelperCause = "no-namespace"
	CausePodSecurity  HelperCause = "pod-security"
	CauseAdmission    HelperCause = "admission"
	CauseImagePull    HelperCause = "image-pull"
	CausePodFailed    HelperCause = "pod-failed"
	CauseStartTimeout HelperCause = "start-timeout"
	CauseAPI          HelperCause = "api"
)

// HelperError is a node that could not be read, with the cause and the flag or grant that helps.
type HelperError struct {
	Node    string
	Cause   HelperCause
	Message string
	Fix     string
	Err     error
}

func (e *HelperError) Error() string {
	msg := fmt.Sprintf("node %s: %s", e.Node, e.Message)
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

func (e *HelperError) Unwrap() error { return e.Err }

// NotPermitted reports whether the cluster's rules (RBAC, admission, a helper namespace not
// set up) or the node's state prevent the read: a SKIP with the reason, not a failure of the
// check.
func (e *HelperError) NotPermitted() bool {
	switch e.Cause {
	case CauseForbidden, CauseNoNamespace, CausePodSecurity, CauseAdmission, CauseNodeNotReady, CauseNoPolicy:
		return true
	}
	return false
}

// NodeShells gives a shell in the network namespace of a node: a pod of a trusted system
// DaemonSet there when exec into it works, otherwise a short-lived helper pod.
type NodeShells struct {
	client client.Interface
	exec   Executor
	cfg    HelperConfig
	seq    atomic.Int64

	mu sync.Mutex
	// created are the helper pods this run created (or may have: a create whose answer was
	// lost), not yet seen deleted; Close deletes them by name even when it cannot list.
	created map[string]bool
	// attempted: this run asked for a helper pod at least once. Close still sweeps the run's
	// pods when it did not, but a failed sweep then warns of nothing (with --no-helpers or
	// namespace-only RBAC the helper namespace may not be listable).
	attempted bool
	closed    bool
	// trust tells the system DaemonSets whose pods may read a node.
	trust *ReaderTrust
	// policyChecked and policyErr: the helper namespace's admission policy is read once a run.
	policyChecked bool
	policyErr     error
}

// policyOnce is checkPolicy, read once for the run (the first node that needs a helper).
func (s *NodeShells) policyOnce(ctx context.Context, node string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.policyChecked {
		s.policyErr = s.checkPolicy(ctx, node)
		s.policyChecked = ctx.Err() == nil
	}
	return s.policyErr
}

// NewNodeShells prepares helper pods for one run; nothing is created until Open.
func NewNodeShells(client client.Interface, exec Executor, cfg HelperConfig) *NodeShells {
	return &NodeShells{client: client, exec: exec, cfg: cfg.withDefaults(), created: map[string]bool{}, trust: NewReaderTrust(client)}
}

// Config returns the effective configuration (defaults applied).
func (s *NodeShells) Config() HelperConfig { return s.cfg }

// NodeShell runs commands in one node's network namespace. Close it when done.
type NodeShell struct {
	Node      string
	Pod       PodRef
	Container string
	// Helper is true when the pod was created for this read (and is deleted by Close).
	Helper bool
	// HostPID is true when the pod shares the host's PID namespace, so /proc/<pid> of the
	// node's processes is visible (owning processes of sockets can be named).
	HostPID bool
	// Reader names the trusted DaemonSet of an existing pod ("kube-system/kube-proxy").
	Reader string
	exec   Executor
	owner  *NodeShells
}

// PodShell is a shell on node through a pod the caller already names (Reader says whose pod it
// is, for evidence); Close leaves the pod alone. Readers of node state take a NodeShell whatever
// opened it, so their tests give them one over a fake Executor.
func PodShell(node string, pod PodRef, container, reader string, exec Executor) *NodeShell {
	return &NodeShell{Node: node, Pod: pod, Container: container, Reader: reader, exec: exec}
}

// Via says in words which pod reads the node, for evidence.
func (n *NodeShell) Via() string {
	if n.Helper {
		return "helper pod " + n.Pod.String()
	}
	return "pod " + n.Pod.String() + " of DaemonSet " + n.Reader
}

// Exec runs cmd in the node's network namespace.
func (n *NodeShell) Exec(ctx context.Context, cmd []string) ([]byte, []byte, error) {
	return n.exec.Exec(ctx, n.Pod, n.Container, cmd, nil)
}

// Close deletes the helper pod, if this shell created one. It uses its own short deadline so
// it also works after the caller's context was cancelled (Ctrl-C). A failed deletion is a
// *LeftPodsError naming the pod and the command that removes it.
func (n *NodeShell) Close() error {
	if !n.Helper {
		return nil
	}
	if err := n.owner.deletePod(n.Pod.Name); err != nil {
		return n.owner.leftError([]string{n.Pod.Name}, err)
	}
	return nil
}

// Open finds or makes a shell on node. Errors are *HelperError when the cause is known.
func (s *NodeShells) Open(ctx context.Context, node *corev1.Node) (*NodeShell, error) {
	if !kubeobj.NodeReady(node) {
		return nil, &HelperError{Node: node.Name, Cause: CauseNodeNotReady,
			Message: "node is not Ready: no pod can run there to read its sockets",
			Fix:     "check `kubectl describe node " + node.Name + "`"}
	}
	if sh := s.existing(ctx, node.Name); sh != nil {
		return sh, nil
	}
	return s.helper(ctx, node)
}

const helperContainer = "reader"

// HelperPod is the pod that reads a node. What it reads needs different things, each
// checked against the kernel's own rules (kernel sources below; lab/e2e runs both reads under
// these exact credentials on this machine's kernel):
//
//   - The socket tables /proc/net/{tcp,tcp6,udp,udp6} belong to the reader's network
//     namespace, are mode 0444 (net/ipv4/tcp_ipv4.c: proc_create_net_data("tcp", 0444, ...))
//     and list every socket of the namespace with its uid and inode to any reader. The node's
//     network namespace (hostNetwork) is all they need: the default helper runs as nobody
//     (uid 65534), non-root, every capability dropped, no privilege escalation.
//   - The process that holds a socket is found by reading the links in /proc/PID/fd of every
//     process of the node, which needs the node's PID namespace (hostPID) and, per process:
//     opening /proc/PID/fd, a 0500 directory owned by the process's uid (fs/proc/base.c
//     DIR("fd", S_IRUSR|S_IXUSR, ...); fs/proc/fd.c proc_fd_permission -> generic_permission),
//     so another uid needs CAP_DAC_READ_SEARCH; and reading each link, proc_fd_access_allowed
//     -> ptrace_may_access(PTRACE_MODE_READ_FSCREDS) (kernel/ptrace.c __ptrace_may_access:
//     the same uid and gid as the process, else CAP_SYS_PTRACE; then security/commoncap.c
//     cap_ptrace_access_check: the reader's effective capabilities must cover the process's
//     permitted ones, else CAP_SYS_PTRACE). A root daemon keeps capabilities a container does
//     not have, so naming any process takes CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH, and uid 0:
//     Kubernetes gives added capabilities to a non-root container's bounding set only (no
//     ambient set; kubernetes/kubernetes#56374, containerd clears it). hostPID with
//     CAP_SYS_PTRACE may attach to any process of the node, i.e. it is node root: that shape
//     is opt-in (HelperConfig.NameOwners, --name-owners), and the helper namespace's policy
//     admits it only where an administrator labelled the namespace for it. On nodes whose
//     runtime applies an AppArmor profile, that profile allows ptrace reads of its own peers
//     only, and the owners stay unnamed (reported as such, never guessed).
//
// Both shapes: no privilege, a read-only root, the runtime's seccomp profile, no service
// account token, no volume, no port, a kubelet-enforced deadline, and tolerations for every
// taint (the nodes that carry addresses are often tainted).
func HelperPod(cfg HelperConfig, name, node string) *corev1.Pod {
	cfg = cfg.withDefaults()
	secs := int64(cfg.ActiveDeadline.Seconds())
	sc := &corev1.SecurityContext{
		Privileged:               new(false),
		AllowPrivilegeEscalation: new(false),
		ReadOnlyRootFilesystem:   new(true),
		RunAsNonRoot:             new(true),
		RunAsUser:                ptr.To[int64](helperUID),
		RunAsGroup:               ptr.To[int64](helperUID),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if cfg.NameOwners {
		sc.RunAsNonRoot = new(false)
		sc.RunAsUser = ptr.To[int64](0)
		sc.RunAsGroup = ptr.To[int64](0)
		sc.Capabilities.Add = []corev1.Capability{"SYS_PTRACE", "DAC_READ_SEARCH"}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   cfg.Namespace,
			Labels:      map[string]string{ManagedByLabel: ManagedByValue, RunIDLabel: cfg.RunID},
			Annotations: map[string]string{NodeAnnotation: node},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			HostNetwork:                   true,
			HostPID:                       cfg.NameOwners,
			DNSPolicy:                     corev1.DNSDefault,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &secs,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            helperContainer,
				Image:           cfg.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				// Sleeps no longer than the pod may live; commands come by exec.
				Command:         []string{"sleep", strconv.FormatInt(secs, 10)},
				SecurityContext: sc,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
}

// helperName is deterministic (not generateName) so that a create whose answer was lost to a
// cancel can still be deleted by name.
func (s *NodeShells) helperName(node string) string {
	n := s.seq.Add(1)
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, node)
	prefix := fmt.Sprintf("lanaccess-%s-%d-", s.cfg.RunID, n)
	if room := 63 - len(prefix); len(clean) > room {
		sum := sha256.Sum256([]byte(node))
		clean = clean[:room-9] + "-" + hex.EncodeToString(sum[:4])
	}
	return strings.Trim(prefix+clean, "-")
}

// errShellsClosed: the run is over (Close was called); no helper is made after it.
var errShellsClosed = errors.New("the run's helper pods were already cleaned up: no new helper pod")

func (s *NodeShells) helper(ctx context.Context, node *corev1.Node) (*NodeShell, error) {
	name := s.helperName(node.Name)
	pod := HelperPod(s.cfg, name, node.Name)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("node %s: %w", node.Name, errShellsClosed)
	}
	s.mu.Unlock()
	if err := s.policyOnce(ctx, node.Name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.created[name] = true
	s.attempted = true
	s.mu.Unlock()
	_, err := s.client.CoreV1().Pods(s.cfg.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// The create may have landed even though its answer did not (cancel, timeout); if
		// this deletion fails too, Close tries again by name.
		_ = s.deletePod(name)
		return nil, s.createError(node.Name, err)
	}
	shell := &NodeShell{Node: node.Name, Pod: PodRef{s.cfg.Namespace, name}, Container: helperContainer, Helper: true, HostPID: s.cfg.NameOwners, exec: s.exec, owner: s}
	if err := s.waitRunning(ctx, node.Name, name); err != nil {
		_ = s.deletePod(name)
		return nil, err
	}
	return shell, nil
}

// helperSetup is how the helper namespace is made: the helper bundle of the shipped manifests.
const helperSetup = "`kubectl lanaccess manifests rbac-helpers | kubectl apply -f -` creates namespace " + DefaultHelperNamespace + " for them (Pod Security privileged, narrowed to the helper's pod shape by an admission policy)"

func (s *NodeShells) createError(node string, err error) error {
	ns := s.cfg.Namespace
	msg := err.Error()
	switch {
	case apierrors.IsNotFound(err):
		return &HelperError{Node: node, Cause: CauseNoNamespace, Err: err,
			Message: fmt.Sprintf("the helper namespace %s does not exist: %s", ns, msg),
			Fix:     helperSetup + "; or name another with --helper-namespace, or use --no-helpers to stay read-only"}
	case apierrors.IsForbidden(err) && strings.Contains(msg, "PodSecurity"):
		return &HelperError{Node: node, Cause: CausePodSecurity, Err: err,
			Message: fmt.Sprintf("Pod Security admission in namespace %s rejected the hostNetwork helper pod: %s", ns, msg),
			Fix:     "hostNetwork needs the privileged level, which namespace " + ns + " does not allow; " + helperSetup + ", the default of --helper-namespace; or use --no-helpers to stay read-only"}
	case (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && strings.Contains(msg, "ValidatingAdmissionPolicy"):
		// A policy's refusal is 403 with reason Forbidden, 422 without one (the API's default).
		fix := "the helper namespace admits only the helper's own pod shape: pass no --image other than the pinned one (a mirror must keep its digest, " + HelperImageDigest + ")"
		if s.cfg.NameOwners {
			fix = "--name-owners needs hostPID, uid 0 and CAP_SYS_PTRACE, which the helper namespace admits only where a cluster administrator allowed it: " + remedy.Command("kubectl", "label", "namespace", ns, HelperOwnersLabel+"="+HelperOwnersAllowed) + "; or drop --name-owners"
		}
		return &HelperError{Node: node, Cause: CauseAdmission, Err: err,
			Message: "an admission policy rejected the helper pod: " + msg, Fix: fix}
	case apierrors.IsForbidden(err) && (strings.Contains(msg, "admission webhook") || strings.Contains(msg, "denied the request")):
		return &HelperError{Node: node, Cause: CauseAdmission, Err: err,
			Message: "an admission policy rejected the helper pod: " + msg,
			Fix:     "exempt pods labelled " + ManagedByLabel + "=" + ManagedByValue + " in namespace " + ns + ", use --helper-namespace, or --no-helpers"}
	case apierrors.IsForbidden(err):
		return &HelperError{Node: node, Cause: CauseForbidden, Err: err,
			Message: "not permitted to create helper pods: " + msg,
			Fix:     fmt.Sprintf("grant create, get, list, delete on pods and create on pods/exec in namespace %s (`kubectl lanaccess manifests rbac-helpers`), or --no-helpers", ns)}
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("node %s: creating helper pod: %w", node, err)
	}
	return &HelperError{Node: node, Cause: CauseAPI, Err: err, Message: "creating helper pod in namespace " + ns + ": " + msg}
}

// waitRunning polls until the helper runs, failing fast on states that will not resolve by
// themselves (image pulls, config errors, a failed pod) and after StartTimeout at the latest.
func (s *NodeShells) waitRunning(ctx context.Context, node, name string) error {
	deadline := time.NewTimer(s.cfg.StartTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	// last is set on every pass before the select that reports it (the first Get comes
	// before the first wait), so it needs no initial value.
	var last string
	for {
		pod, err := s.client.CoreV1().Pods(s.cfg.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
			return fmt.Errorf("node %s: waiting for helper pod %s/%s: %w", node, s.cfg.Namespace, name, err)
		case apierrors.IsNotFound(err):
			return &HelperError{Node: node, Cause: CausePodFailed, Err: err, Message: fmt.Sprintf("helper pod %s/%s disappeared while starting (deleted by someone else or evicted)", s.cfg.Namespace, name)}
		case err != nil:
			last = err.Error()
		default:
			if done, herr := s.judgeStart(node, pod); done {
				return herr
			}
			last = describeStart(pod)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: waiting for helper pod %s/%s: %w", node, s.cfg.Namespace, name, ctx.Err())
		case <-deadline.C:
			return &HelperError{Node: node, Cause: CauseStartTimeout,
				Message: fmt.Sprintf("helper pod %s/%s did not start within %s (last state: %s)", s.cfg.Namespace, name, s.cfg.StartTimeout, last),
				Fix:     "check `kubectl -n " + s.cfg.Namespace + " describe pod " + name + "`; if the image cannot be fetched, mirror it and pass --image, or use --no-helpers"}
		case <-tick.C:
		}
	}
}

// judgeStart returns done=true with nil when the pod runs, or with the error that ends the wait.
func (s *NodeShells) judgeStart(node string, pod *corev1.Pod) (bool, error) {
	ref := s.cfg.Namespace + "/" + pod.Name
	switch pod.Status.Phase {
	case corev1.PodRunning:
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == helperContainer && cs.State.Running != nil {
				return true, nil
			}
		}
	case corev1.PodFailed, corev1.PodSucceeded:
		return true, &HelperError{Node: node, Cause: CausePodFailed,
			Message: fmt.Sprintf("helper pod %s ended (%s): %s %s", ref, pod.Status.Phase, pod.Status.Reason, pod.Status.Message),
			Fix:     "the kubelet refused or stopped it; check `kubectl -n " + s.cfg.Namespace + " describe pod " + pod.Name + "`"}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
			return true, &HelperError{Node: node, Cause: CauseImagePull,
				Message: fmt.Sprintf("helper image %s cannot be pulled on this node (%s: %s)", s.cfg.Image, w.Reason, w.Message),
				Fix:     "mirror the image to a registry the nodes can reach (a copy keeps its digest) and pass --image REGISTRY/busybox@" + HelperImageDigest + ", or use --no-helpers"}
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			return true, &HelperError{Node: node, Cause: CausePodFailed,
				Message: fmt.Sprintf("helper pod %s cannot start its container (%s: %s)", ref, w.Reason, w.Message)}
		}
	}
	return false, nil
}

func describeStart(pod *corev1.Pod) string {
	parts := []string{string(pod.Status.Phase)}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Message != "" {
			parts = append(parts, c.Message)
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			parts = append(parts, cs.State.Waiting.Reason)
		}
	}
	return strings.Join(parts, ", ")
}

// deletePod removes one of our pods with a fresh deadline: it runs on the way out of a
// cancelled run as well, when the caller's context is already done.
func (s *NodeShells) deletePod(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := s.client.CoreV1().Pods(s.cfg.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting helper pod %s/%s: %w", s.cfg.Namespace, name, err)
	}
	s.mu.Lock()
	delete(s.created, name)
	s.mu.Unlock()
	return nil
}

// LeftPodsError names helper pods that could not be deleted and the command that removes
// them: a run must never leave a pod behind silently.
type LeftPodsError struct {
	Pods []PodRef
	// Cleanup is the command that removes them (`kubectl lanaccess cleanup ...`).
	Cleanup string
	// Deadline is how long the pods may live at most where the kubelet runs.
	Deadline time.Duration
	Err      error
}

func (e *LeftPodsError) Error() string {
	if len(e.Pods) == 0 {
		return fmt.Sprintf("the run's helper pods could not be listed (%v): any left behind ends within %s of its start where the kubelet runs; check and remove them with `%s`",
			e.Err, e.Deadline, e.Cleanup)
	}
	names := make([]string, len(e.Pods))
	for i, p := range e.Pods {
		names[i] = p.String()
	}
	return fmt.Sprintf("helper pod %s could not be deleted (%v): it ends within %s of its start where the kubelet runs; remove it now with `%s`",
		strings.Join(names, ", "), e.Err, e.Deadline, e.Cleanup)
}

func (e *LeftPodsError) Unwrap() error { return e.Err }

// CleanupCommand is the command that deletes the helper pods of one run.
func CleanupCommand(namespace, runID string) string {
	return remedy.Command("kubectl", "lanaccess", "cleanup", "-n", namespace, "--run-id", runID)
}

func (s *NodeShells) leftError(names []string, err error) *LeftPodsError {
	pods := make([]PodRef, len(names))
	for i, n := range names {
		pods[i] = PodRef{Namespace: s.cfg.Namespace, Name: n}
	}
	return &LeftPodsError{Pods: pods, Cleanup: CleanupCommand(s.cfg.Namespace, s.cfg.RunID), Deadline: s.cfg.ActiveDeadline, Err: err}
}

// Close deletes every helper pod of this run still present: the safety net for a shell that
// was never closed (a panic, a check cut by its deadline, a create whose answer was lost).
// It deletes the pods this run created by name, so that it works even when listing fails,
// and the pods the list finds with this run's label. No helper is made after it. A pod it
// could not delete is a *LeftPodsError. Safe to call more than once.
func (s *NodeShells) Close() error {
	s.mu.Lock()
	s.closed = true
	names := make([]string, 0, len(s.created))
	for n := range s.created {
		names = append(names, n)
	}
	attempted := s.attempted
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pods, listErr := s.client.CoreV1().Pods(s.cfg.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: ManagedByLabel + "=" + ManagedByValue + "," + RunIDLabel + "=" + s.cfg.RunID,
	})
	if listErr == nil {
		for _, p := range pods.Items {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	} else {
		listErr = fmt.Errorf("listing the helper pods of run %s in %s: %w", s.cfg.RunID, s.cfg.Namespace, listErr)
	}
	sort.Strings(names)
	var left []string
	var errs []error
	for _, n := range names {
		if err := s.deletePod(n); err != nil {
			left = append(left, n)
			errs = append(errs, err)
		}
	}
	if len(left) > 0 {
		return s.leftError(left, errors.Join(append(errs, listErr)...))
	}
	if listErr != nil && attempted {
		// Everything this run made is gone; what the list would have added is unknown.
		return s.leftError(nil, listErr)
	}
	return nil
}
