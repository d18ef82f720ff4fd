package bench

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
)

// Load is the cluster-size scenario: Services and pods spread over namespaces, one share of
// them in the setup's own namespace (traefik), where doctor lists pods by label selector.
// The pods carry a scheduling gate: they stay Pending, so the lab's nodes do no work for them
// while the apiserver, etcd and every LIST still see them.
type Load struct {
	Namespaces int
	Services   int
	Pods       int
}

const (
	loadLabel = "lab.lanaccess.io/bench"
	loadValue = "load"
	loadGate  = "lab.lanaccess.io/bench-load"
)

func loadNamespace(i int) string {
	if i == 0 {
		return "traefik" // the setup's namespace carries its share
	}
	return fmt.Sprintf("bench-load-%02d", i)
}

// Create makes the objects with workers parallel requests (client QPS is the caller's).
func (ld Load) Create(ctx context.Context, c kubernetes.Interface, workers int, log func(string, ...any)) error {
	for i := 1; i < ld.Namespaces; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: loadNamespace(i), Labels: map[string]string{loadLabel: loadValue}}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return fmt.Errorf("namespace %s: %w", ns.Name, err)
		}
	}
	// errgroup bounds the requests in flight; the first error cancels the rest.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	start := time.Now()
	perNSsvc, perNSpod := ld.Services/ld.Namespaces, ld.Pods/ld.Namespaces
	for n := 0; n < ld.Namespaces && gctx.Err() == nil; n++ {
		ns := loadNamespace(n)
		for i := range perNSsvc {
			g.Go(func() error { return ignoreExists(createLoadService(gctx, c, ns, i)) })
		}
		for i := range perNSpod {
			g.Go(func() error { return ignoreExists(createLoadPod(gctx, c, ns, i, perNSsvc)) })
		}
		log("load: namespace %d/%d sent (%s)", n+1, ld.Namespaces, time.Since(start).Round(time.Second))
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func createLoadService(ctx context.Context, c kubernetes.Interface, ns string, i int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-svc-%04d", i), Namespace: ns, Labels: map[string]string{loadLabel: loadValue}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": fmt.Sprintf("load-%04d", i)},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	_, err := c.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	return err
}

func createLoadPod(ctx context.Context, c kubernetes.Interface, ns string, i, services int) error {
	app := fmt.Sprintf("load-%04d", i%max(services, 1))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-pod-%05d", i), Namespace: ns,
			Labels: map[string]string{loadLabel: loadValue, "app": app}},
		Spec: corev1.PodSpec{
			SchedulingGates: []corev1.PodSchedulingGate{{Name: loadGate}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}},
		},
	}
	_, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// Delete removes the load: the namespaces it created (waiting until they are gone) and its
// labelled objects in the setup's namespace.
func (ld Load) Delete(ctx context.Context, c kubernetes.Interface) error {
	sel := metav1.ListOptions{LabelSelector: loadLabel + "=" + loadValue}
	ns := loadNamespace(0)
	if err := c.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return err
	}
	svcs, err := c.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	for _, s := range svcs.Items {
		if err := c.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	for i := 1; i < ld.Namespaces; i++ {
		if err := c.CoreV1().Namespaces().Delete(ctx, loadNamespace(i), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return poll(ctx, 5*time.Minute, func() error {
		l, err := c.CoreV1().Namespaces().List(ctx, sel)
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("%d load namespaces still terminating", len(l.Items))
		}
		return nil
	})
}

// Counts reads back how many Services and pods the cluster has in all.
func Counts(ctx context.Context, c kubernetes.Interface) (services, pods int, err error) {
	services, err = countAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Services("").List(ctx, o)
	})
	if err != nil {
		return 0, 0, err
	}
	pods, err = countAll(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Pods("").List(ctx, o)
	})
	return services, pods, err
}

// countAll counts the objects of a paginated LIST (client-go's pager, 500 per page).
func countAll(ctx context.Context, opts metav1.ListOptions, list pager.ListPageFunc) (int, error) {
	n := 0
	err := pager.New(list).EachListItem(ctx, opts, func(runtime.Object) error {
		n++
		return nil
	})
	return n, err
}
