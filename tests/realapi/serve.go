package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func serveMain(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "write the kubeconfig (contexts admin and restricted) here")
	logPath := fs.String("log", "", "server and etcd logs go here (default: stderr)")
	watchPID := fs.Int("watch-pid", 0, "stop when the process with this id is gone (the test run that started us)")
	var crdDirs stringList
	fs.Var(&crdDirs, "crds", "install every CRD of this folder before the seeds (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	seeds := fs.Args()

	// The first SIGTERM/SIGINT stops the server; registered before anything starts so a signal during
	// start-up is not lost (the caller may give up waiting for "ready").
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if *watchPID > 0 {
		ctx = stopWhenGone(ctx, *watchPID)
	}

	logOut := io.Writer(os.Stderr)
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		logOut = f
		// Everything to the file, errors included: the caller's stderr is for this program's own failures.
		kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(kfs)
		for name, value := range map[string]string{"logtostderr": "false", "alsologtostderr": "false",
			"stderrthreshold": "FATAL"} {
			if err := kfs.Set(name, value); err != nil {
				return err
			}
		}
	}
	klog.SetOutput(logOut)

	dir, err := os.MkdirTemp("", "kyrec-realapi-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	srv, err := start(ctx, dir, *logPath)
	if err != nil {
		return err
	}
	defer srv.shutdown()

	if err := writeKubeconfig(*kubeconfig, srv); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	// Seeding sends a few hundred requests at most; client-go's default 5 QPS would make it crawl.
	cfg.QPS, cfg.Burst = 500, 1000
	if err := waitReady(ctx, srv, cfg); err != nil {
		return err
	}
	for _, d := range crdDirs {
		if err := installCRDs(ctx, cfg, d); err != nil {
			return fmt.Errorf("CRDs of %s: %w", d, err)
		}
	}
	if err := seedFiles(ctx, cfg, seeds); err != nil {
		return err
	}
	fmt.Println("ready")
	select {
	case <-ctx.Done():
	case err := <-srv.errCh:
		return fmt.Errorf("kube-apiserver stopped: %w", err)
	}
	return nil
}

// stopWhenGone cancels the context once process pid no longer exists: the pytest fixture starts this
// server detached (not as its child), and a test run killed outright must not leave it serving for ever.
func stopWhenGone(parent context.Context, pid int) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		defer cancel()
		for {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				klog.Infof("process %d is gone: stopping", pid)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return ctx
}

type server struct {
	port              int
	caPEM             []byte
	adminToken        string
	restrictedToken   string
	etcd              *embed.Etcd
	cancel            context.CancelFunc
	errCh             chan error
	shutdownCompleted bool
}

// shutdown stops the API server before etcd (the reverse would leave the server retrying a dead store),
// each within a bound so a stuck shutdown cannot hang the caller's test run.
func (s *server) shutdown() {
	if s.shutdownCompleted {
		return
	}
	s.shutdownCompleted = true
	s.cancel()
	select {
	case <-s.errCh:
	case <-time.After(20 * time.Second):
		klog.Warning("kube-apiserver did not stop within 20s")
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
}

func start(parent context.Context, dir, logPath string) (*server, error) {
	ca, caKey, err := newCA()
	if err != nil {
		return nil, err
	}
	srv := &server{caPEM: pemCert(ca), errCh: make(chan error, 1)}
	certPEM, keyPEM, err := newServingCert(ca, caKey)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	saDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, err
	}
	srv.adminToken, srv.restrictedToken = randomToken(), randomToken()
	// token,user,uid,"groups": the restricted user has no rights until a test binds some to it or its group.
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n%s,restricted,restricted-uid,\"restricted-users\"\n",
		srv.adminToken, srv.restrictedToken)
	files := map[string][]byte{
		"ca.crt":     srv.caPEM,
		"server.crt": certPEM,
		"server.key": keyPEM,
		"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}),
		"tokens.csv": []byte(tokens),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}

	etcdURL, e, err := startEtcd(dir, logPath)
	if err != nil {
		return nil, err
	}
	srv.etcd = e

	// The listener is made here and handed to the server, so the port is ours from the start (no window
	// between picking a free port and binding it).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.Close()
		return nil, err
	}
	srv.port = ln.Addr().(*net.TCPAddr).Port

	ctx, cancel := context.WithCancel(parent)
	srv.cancel = cancel
	if err := runAPIServer(ctx, dir, etcdURL, ln, srv.errCh); err != nil {
		cancel()
		e.Close()
		return nil, err
	}
	return srv, nil
}

func runAPIServer(ctx context.Context, dir, etcdURL string, ln net.Listener, errCh chan error) error {
	s := options.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	err := fs.Parse([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--tls-cert-file=" + p("server.crt"),
		"--tls-private-key-file=" + p("server.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--token-auth-file=" + p("tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-account-key-file=" + p("sa.key"),
		"--service-account-signing-key-file=" + p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		// The kubernetes Service's Endpoints cannot hold a loopback address; nothing here needs them.
		"--endpoint-reconciler-type=none",
		// Without kube-controller-manager no namespace gets its "default" ServiceAccount, and the
		// ServiceAccount admission plugin would then refuse every Pod; tests create Pods freely.
		"--disable-admission-plugins=ServiceAccount",
	})
	if err != nil {
		return err
	}
	s.SecureServing.Listener = ln
	s.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return err
	}
	completedOptions, err := s.Complete(ctx)
	if err != nil {
		return err
	}
	if errs := completedOptions.Validate(); len(errs) != 0 {
		return errors.Join(errs...)
	}
	config, err := app.NewConfig(completedOptions)
	if err != nil {
		return err
	}
	completed, err := config.Complete()
	if err != nil {
		return err
	}
	chain, err := app.CreateServerChain(completed)
	if err != nil {
		return err
	}
	prepared, err := chain.PrepareRun()
	if err != nil {
		return err
	}
	go func() {
		errCh <- prepared.Run(ctx)
	}()
	return nil
}

// startEtcd starts a one-member etcd on two free loopback ports. embed cannot take ready-made listeners,
// so a port picked free can be taken before etcd binds it: a few attempts make that race harmless.
func startEtcd(dir, logPath string) (string, *embed.Etcd, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		cport, err := freePort()
		if err != nil {
			return "", nil, err
		}
		pport, err := freePort()
		if err != nil {
			return "", nil, err
		}
		cfg := embed.NewConfig()
		cfg.Name = "realapi"
		cfg.Dir = filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt))
		curl, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", cport))
		purl, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", pport))
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*curl}, []url.URL{*curl}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*purl}, []url.URL{*purl}
		cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
		// A throwaway store: fsync buys nothing and costs seconds on every write burst.
		cfg.UnsafeNoFsync = true
		cfg.LogLevel = "error"
		if logPath != "" {
			cfg.LogOutputs = []string{logPath}
		}
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			lastErr = err
			continue
		}
		select {
		case <-e.Server.ReadyNotify():
			return curl.String(), e, nil
		case err := <-e.Err():
			e.Close()
			lastErr = err
		case <-time.After(60 * time.Second):
			e.Close()
			return "", nil, errors.New("etcd not ready within 60s")
		}
	}
	return "", nil, fmt.Errorf("etcd did not start: %w", lastErr)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady waits for /readyz (every post-start hook done: RBAC bootstrap roles, system namespaces) and for
// the default namespace, bounded, and fails at once if the server stopped.
func waitReady(ctx context.Context, srv *server, cfg *restConfig) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case err := <-srv.errCh:
			srv.errCh <- err
			return fmt.Errorf("kube-apiserver stopped during start-up: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		status := 0
		cs.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		if status == 200 {
			if _, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready within 3 minutes (last /readyz status %d)", status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func writeKubeconfig(path string, srv *server) error {
	c := clientcmdapi.NewConfig()
	c.Clusters["realapi"] = &clientcmdapi.Cluster{
		Server:                   fmt.Sprintf("https://127.0.0.1:%d", srv.port),
		CertificateAuthorityData: srv.caPEM,
	}
	c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: srv.adminToken}
	c.AuthInfos["restricted"] = &clientcmdapi.AuthInfo{Token: srv.restrictedToken}
	c.Contexts["admin"] = &clientcmdapi.Context{Cluster: "realapi", AuthInfo: "admin", Namespace: "default"}
	c.Contexts["restricted"] = &clientcmdapi.Context{Cluster: "realapi", AuthInfo: "restricted", Namespace: "default"}
	c.CurrentContext = "admin"
	return clientcmd.WriteToFile(*c, path)
}

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func newCA() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kyrec-realapi-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newServingCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey) ([]byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
