package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

const calendarAddress = "jobsched_calendar.holidays"

func calendarConfig(name, dates, ranges string) string {
	return fmt.Sprintf(`
resource "jobsched_calendar" "holidays" {
  name     = %q
  timezone = "Europe/Madrid"
  dates    = %s
  ranges   = %s
}

resource "jobsched_task" "workday" {
  name     = "workday report"
  schedule = { cron = "0 9 * * *", timezone = "Europe/Madrid", exclude_calendars = [jobsched_calendar.holidays.name] }
  http     = { url = "https://hooks.example.com/workday" }
}
`, name, dates, ranges)
}

func checkCalendarsGone(s *terraform.State) error {
	api, err := client.New(testAPI.URL, testAPI.Token, "tfacc")
	if err != nil {
		return err
	}
	for _, res := range s.RootModule().Resources {
		if res.Type != "jobsched_calendar" {
			continue
		}
		if _, err := api.GetCalendar(context.Background(), res.Primary.Attributes["name"]); !client.IsNotFound(err) {
			return fmt.Errorf("calendar %s still readable after destroy (err %v)", res.Primary.Attributes["name"], err)
		}
	}
	return checkTasksGone(s)
}

// TestAccCalendarExcludedByATask: a calendar and a task excluding it are created together (the task
// after the calendar), read back without a diff whatever the order of the dates, edited in place
// with If-Match, a bad date refused on the apply, imported by name, and destroyed (the task first).
func TestAccCalendarExcludedByATask(t *testing.T) {
	requireAPI(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: protoV6Providers,
		CheckDestroy:             checkCalendarsGone,
		Steps: []resource.TestStep{
			{
				Config: calendarConfig("tf-holidays", `["2027-12-25", "2027-01-01"]`, `[{ from = "2027-08-01", to = "2027-08-15" }]`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(calendarAddress, "name", "tf-holidays"),
					resource.TestCheckResourceAttr(calendarAddress, "dates.#", "2"),
					resource.TestCheckTypeSetElemAttr(calendarAddress, "dates.*", "2027-01-01"),
					resource.TestCheckResourceAttr(calendarAddress, "ranges.0.from", "2027-08-01"),
					resource.TestCheckResourceAttr(calendarAddress, "ranges.0.to", "2027-08-15"),
					resource.TestCheckResourceAttr(calendarAddress, "version", "1"),
					resource.TestCheckResourceAttr("jobsched_task.workday", "schedule.exclude_calendars.0", "tf-holidays"),
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{ // an edit in place: the task is untouched
				Config: calendarConfig("tf-holidays", `["2027-12-25", "2027-01-01", "2027-01-06"]`, `[]`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(calendarAddress, plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("jobsched_task.workday", plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(calendarAddress, "dates.#", "3"),
					resource.TestCheckResourceAttr(calendarAddress, "ranges.#", "0"),
					resource.TestCheckResourceAttr(calendarAddress, "version", "2"),
				),
			},
			{
				Config:      calendarConfig("tf-holidays", `["2027-02-30"]`, `[]`),
				ExpectError: regexp.MustCompile(`Updating the calendar failed: dates\[0\]`),
			},
			{
				ResourceName:                         calendarAddress,
				ImportState:                          true,
				ImportStateId:                        "tf-holidays",
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				Config:                               calendarConfig("tf-holidays", `["2027-12-25", "2027-01-01", "2027-01-06"]`, `[]`),
			},
		},
	})
}
