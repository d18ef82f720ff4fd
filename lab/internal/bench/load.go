package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
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
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("namespace %s: %w", ns.Name, err)
		}
	}
	type job struct {
		svc bool
		ns  string
		i   int
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var err error
				if j.svc {
					err = createLoadService(ctx, c, j.ns, j.i)
				} else {
					err = createLoadPod(ctx, c, j.ns, j.i, ld.Services/ld.Namespaces)
				}
				if err != nil && !apierrors.IsAlreadyExists(err) {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	send := func(j job) bool {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed {
			return false
		}
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	perNSsvc, perNSpod := ld.Services/ld.Namespaces, ld.Pods/ld.Namespaces
	func() {
		for n := 0; n < ld.Namespaces; n++ {
			for i := 0; i < perNSsvc; i++ {
				if !send(job{svc: true, ns: loadNamespace(n), i: i}) {
					return
				}
			}
			for i := 0; i < perNSpod; i++ {
				if !send(job{ns: loadNamespace(n), i: i}) {
					return
				}
			}
			log("load: namespace %d/%d done (%s)", n+1, ld.Namespaces, time.Since(start).Round(time.Second))
		}
	}()
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
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
	count := func(list func(metav1.ListOptions) (int, string, error)) (int, error) {
		n, opts := 0, metav1.ListOptions{Limit: 500}
		for {
			k, cont, err := list(opts)
			if err != nil {
				return 0, err
			}
			n += k
			if cont == "" {
				return n, nil
			}
			opts.Continue = cont
		}
	}
	services, err = count(func(o metav1.ListOptions) (int, string, error) {
		l, err := c.CoreV1().Services("").List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	if err != nil {
		return 0, 0, err
	}
	pods, err = count(func(o metav1.ListOptions) (int, string, error) {
		l, err := c.CoreV1().Pods("").List(ctx, o)
		if err != nil {
			return 0, "", err
		}
		return len(l.Items), l.Continue, nil
	})
	return services, pods, err
}
