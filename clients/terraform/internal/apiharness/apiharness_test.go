package apiharness

import "testing"

func TestTheTestsGetADatabaseOfTheirOwn(t *testing.T) {
	t.Setenv("TF_ACC_DATABASE_URL", "")
	for given, want := range map[string]string{
		"mysql://root@127.0.0.1:3306/jobsched_tf": "mysql://root@127.0.0.1:3306/jobsched_tf_tfacc",
		"mysql://root@127.0.0.1:3307/":            "mysql://root@127.0.0.1:3307/jobsched_tfacc",
		"":                                        "mysql://root@127.0.0.1:3306/jobsched_tfacc",
	} {
		t.Setenv("DATABASE_URL", given)
		if got, err := DatabaseURL(); err != nil || got != want {
			t.Errorf("DATABASE_URL=%q: %q (%v), want %q", given, got, err, want)
		}
	}
	t.Setenv("TF_ACC_DATABASE_URL", "mysql://root@127.0.0.1:3306/explicit")
	if got, _ := DatabaseURL(); got != "mysql://root@127.0.0.1:3306/explicit" {
		t.Errorf("TF_ACC_DATABASE_URL ignored: %q", got)
	}
}
