package manager

import (
	"context"
	"testing"
)

func TestOptionsDefaults(t *testing.T) {
	if _, err := (Options{}).withDefaults(); err == nil || err.Error() != "manager: an image for the runner and dbservice pods is required (--image)" {
		t.Errorf("no image: %v", err)
	}
	if _, err := (Options{Image: "i", MaxConcurrentTrials: -1}).withDefaults(); err == nil {
		t.Error("negative pool accepted")
	}
	if o, err := (Options{Image: "i", HealthProbeBindAddress: "0"}).withDefaults(); err != nil || o.HealthProbeBindAddress != "" {
		t.Errorf("probe address \"0\" should disable: %q %v", o.HealthProbeBindAddress, err)
	}
	t.Setenv("POD_NAMESPACE", "ops")
	o, err := (Options{Image: "i"}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if o.ManagerNamespace != "ops" || o.MaxConcurrentTrials != DefaultMaxConcurrentTrials || o.MetricsBindAddress != "0" ||
		o.Actors == nil || o.Dial == nil {
		t.Errorf("defaults = %+v", o)
	}
	t.Setenv("POD_NAMESPACE", "")
	if o, _ := (Options{Image: "i"}).withDefaults(); o.ManagerNamespace != DefaultManagerNamespace {
		t.Errorf("manager namespace = %q", o.ManagerNamespace)
	}
}

func TestRunRefusesNilConfig(t *testing.T) {
	if err := Run(context.Background(), nil, Options{Image: "i"}); err == nil || err.Error() != "manager: rest config is nil" {
		t.Errorf("err = %v", err)
	}
}
