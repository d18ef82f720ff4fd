package podexec

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	"github.com/lanaccess/kubectl-lanaccess/pkg/kube/client"
)

// CleanupPolicy says which of our labelled pods `kubectl lanaccess cleanup` deletes. A helper
// of a run that is still going (another operator's doctor, this minute) is never deleted
// unless its run is named or All is set: it is still reading a node.
type CleanupPolicy struct {
	// Namespace to look in; "" is every namespace.
	Namespace string
	// RunIDs deletes the pods of these runs, finished or not.
	RunIDs []string
	// All deletes every pod labelled as ours, running ones included.
	All bool
	// Grace is added to a pod's deadline before it counts as past it (clock skew between this
	// machine and the API server). Default one minute.
	Grace time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// Validate refuses run ids that are no label value (they go into a label selector).
func (p CleanupPolicy) Validate() error {
	for _, id := range p.RunIDs {
		if id == "" {
			return errors.New("invalid run id: empty (a run id is a label value such as 3f9a1c2e)")
		}
		if errs := validation.IsValidLabelValue(id); len(errs) > 0 {
			return fmt.Errorf("invalid run id %q: %s", id, strings.Join(errs, "; "))
		}
	}
	return nil
}

// CleanedPod is one labelled pod and what cleanup did with it, and why.
type CleanedPod struct {
	Pod   PodRef
	RunID string
	Why   string
}

// CleanupResult lists the pods deleted and the pods kept (runs still going).
type CleanupResult struct {
	Deleted []CleanedPod
	Kept    []CleanedPod
}

// Cleanup deletes the pods labelled as ours (app.kubernetes.io/managed-by=kubectl-lanaccess)
// that the policy selects: those of finished runs (the pod ended, is being deleted, or is past
// its activeDeadlineSeconds, which a node that is down never enforces), those of the runs
// named, or all with All. The others are kept and listed with the reason.
func Cleanup(ctx context.Context, client client.Interface, p CleanupPolicy) (CleanupResult, error) {
	if err := p.Validate(); err != nil {
		return CleanupResult{}, err
	}
	if p.Grace <= 0 {
		p.Grace = time.Minute
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	sel := labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedByValue})
	if len(p.RunIDs) > 0 {
		req, err := labels.NewRequirement(RunIDLabel, selection.In, p.RunIDs)
		if err != nil {
			return CleanupResult{}, fmt.Errorf("run ids %v: %w", p.RunIDs, err)
		}
		sel = sel.Add(*req)
	}
	pods, err := client.CoreV1().Pods(p.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		where := "namespace " + p.Namespace
		if p.Namespace == "" {
			where = "all namespaces"
		}
		return CleanupResult{}, fmt.Errorf("listing pods labelled %s in %s: %w", sel, where, err)
	}
	now := p.Now()
	var res CleanupResult
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		c := CleanedPod{Pod: PodRef{pod.Namespace, pod.Name}, RunID: pod.Labels[RunIDLabel]}
		finished, why := runFinished(pod, now, p.Grace)
		switch {
		case finished:
			c.Why = why
		case len(p.RunIDs) > 0:
			c.Why = "run " + c.RunID + " named with --run-id; " + why
		case p.All:
			c.Why = "--all; " + why
		default:
			c.Why = why
			res.Kept = append(res.Kept, c)
			continue
		}
		err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		switch {
		case err == nil:
			res.Deleted = append(res.Deleted, c)
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("deleting pod %s: %w", c.Pod, err))
		}
	}
	for _, l := range [][]CleanedPod{res.Deleted, res.Kept} {
		sort.Slice(l, func(i, j int) bool { return l[i].Pod.String() < l[j].Pod.String() })
	}
	return res, errors.Join(errs...)
}

// runFinished says whether the pod's run is over, and in words what the pod's state is.
func runFinished(p *corev1.Pod, now time.Time, grace time.Duration) (bool, string) {
	switch {
	case p.DeletionTimestamp != nil:
		return true, "already being deleted"
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return true, "ended (" + string(p.Status.Phase) + ")"
	case p.Spec.ActiveDeadlineSeconds == nil:
		return false, string(p.Status.Phase) + " with no deadline: whether its run is over is unknown"
	}
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil && p.Status.StartTime.After(start) {
		start = p.Status.StartTime.Time
	}
	end := start.Add(time.Duration(*p.Spec.ActiveDeadlineSeconds) * time.Second)
	if now.After(end.Add(grace)) {
		return true, fmt.Sprintf("%s past its deadline by %s (its node never ended it)", phaseOrPending(p), now.Sub(end).Round(time.Second))
	}
	return false, fmt.Sprintf("%s, its run may still be reading (deadline in %s)", phaseOrPending(p), end.Sub(now).Round(time.Second))
}

func phaseOrPending(p *corev1.Pod) string {
	if p.Status.Phase == "" {
		return string(corev1.PodPending)
	}
	return string(p.Status.Phase)
}
