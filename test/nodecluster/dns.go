package nodecluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// The cluster's DNS runs as pods of kube-system labelled k8s-app=kube-dns
// behind the kube-dns Service, as kubeadm's CoreDNS does: the operator's
// runner NetworkPolicy admits DNS only to such pods, and kube-router enforces
// it here, so a DNS server on the node's address would be unreachable from
// every runner.
const (
	// DNSServiceIP is the kube-dns Service's clusterIP, kubelet's clusterDNS.
	DNSServiceIP = "10.96.0.10"
	// CoreDNSImage is the single-binary image of hack/coredns
	// (`hack/image single`); Up's caller imports it with the others.
	CoreDNSImage = "tolokaforge.local/coredns:1"
	dnsNamespace = "kube-system"
	dnsName      = "coredns"
)

// coreDNSConfig serves the cluster's zones from the API server (in-cluster
// config: the pod's ServiceAccount) and forwards every other name to the
// resolver of the node's /etc/resolv.conf (the pod's dnsPolicy is Default).
func coreDNSConfig() string {
	return `.:53 {
    errors
    cache 30
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
}
`
}

// dnsObjects are CoreDNS's ServiceAccount, RBAC, Corefile, Deployment and
// the kube-dns Service. The pod runs as non-root with no capabilities: the
// safe sysctl net.ipv4.ip_unprivileged_port_start lets it bind port 53 in
// its own network namespace. It must listen on 53 itself: NetworkPolicy
// ports match the pod's port after the Service's DNAT.
func dnsObjects() (*corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *corev1.ConfigMap, *appsv1.Deployment, *corev1.Service) {
	labels := map[string]string{"k8s-app": "kube-dns"}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: dnsNamespace, Labels: labels}
	}
	sa := &corev1.ServiceAccount{ObjectMeta: meta(dnsName)}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "system:" + dnsName, Labels: labels},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "system:" + dnsName, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: dnsNamespace}},
	}
	cm := &corev1.ConfigMap{ObjectMeta: meta(dnsName), Data: map[string]string{"Corefile": coreDNSConfig()}}
	ports := []corev1.ContainerPort{
		{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
	}
	dep := &appsv1.Deployment{
		ObjectMeta: meta(dnsName),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: sa.Name,
					// The node's resolver, which forward names.
					DNSPolicy:         corev1.DNSDefault,
					PriorityClassName: "system-cluster-critical",
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot:   ptrTo(true),
						RunAsUser:      ptrTo[int64](65532),
						RunAsGroup:     ptrTo[int64](65532),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						Sysctls:        []corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "53"}},
					},
					Containers: []corev1.Container{{
						Name:            dnsName,
						Image:           CoreDNSImage,
						ImagePullPolicy: corev1.PullNever,
						Args:            []string{"-conf", "/etc/coredns/Corefile"},
						Ports:           ports,
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:   corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(53)}},
							TimeoutSeconds: 5, PeriodSeconds: 2,
						},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptrTo(false),
							ReadOnlyRootFilesystem:   ptrTo(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/coredns", ReadOnly: true}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
						ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: meta("kube-dns"),
		Spec: corev1.ServiceSpec{
			Selector:  labels,
			ClusterIP: DNSServiceIP,
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP},
				{Name: "dns-tcp", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	return sa, role, binding, cm, dep, svc
}

// applyDNS creates CoreDNS's objects (Up runs on a fresh cluster: an object
// already there is left as it is).
func applyDNS(ctx context.Context, cs kubernetes.Interface) error {
	sa, role, binding, cm, dep, svc := dnsObjects()
	for _, step := range []struct {
		what   string
		create func() error
	}{
		{"ServiceAccount", func() error {
			_, err := cs.CoreV1().ServiceAccounts(dnsNamespace).Create(ctx, sa, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRole", func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
			return err
		}},
		{"ClusterRoleBinding", func() error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
			return err
		}},
		{"ConfigMap", func() error {
			_, err := cs.CoreV1().ConfigMaps(dnsNamespace).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}},
		{"Service", func() error {
			_, err := cs.CoreV1().Services(dnsNamespace).Create(ctx, svc, metav1.CreateOptions{})
			return err
		}},
		{"Deployment", func() error {
			_, err := cs.AppsV1().Deployments(dnsNamespace).Create(ctx, dep, metav1.CreateOptions{})
			return err
		}},
	} {
		if err := step.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster: CoreDNS %s: %w", step.what, err)
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
