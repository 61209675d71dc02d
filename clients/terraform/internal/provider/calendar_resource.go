package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/setdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/jobsched/terraform-provider-jobsched/internal/client"
)

var (
	_ resource.ResourceWithConfigure   = (*calendarResource)(nil)
	_ resource.ResourceWithImportState = (*calendarResource)(nil)
)

type calendarResource struct {
	api *client.Client
}

type calendarModel struct {
	Name      types.String `tfsdk:"name"`
	Timezone  types.String `tfsdk:"timezone"`
	Dates     types.Set    `tfsdk:"dates"`
	Ranges    types.List   `tfsdk:"ranges"`
	Version   types.Int64  `tfsdk:"version"`
	ETag      types.String `tfsdk:"etag"`
	CreatedAt types.String `tfsdk:"created_at"`
	UpdatedAt types.String `tfsdk:"updated_at"`
}

var rangeType = types.ObjectType{AttrTypes: map[string]attr.Type{"from": types.StringType, "to": types.StringType}}

// NewCalendarResource is the jobsched_calendar resource.
func NewCalendarResource() resource.Resource { return &calendarResource{} }

func (r *calendarResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_calendar"
}

func calendarResourceSchema() schema.Schema {
	return schema.Schema{
		MarkdownDescription: "A calendar of local dates (`PUT /v1/calendars/{name}`): tasks naming it in " +
			"`schedule.exclude_calendars` skip the runs that fall on its dates (their history says " +
			"`calendar:<name>`). An edit affects runs not yet created. Edits are sent with `If-Match: <etag>`: a " +
			"calendar changed outside Terraform since the last read fails the apply with the API's 412. A create " +
			"takes over a calendar of the same name that already exists. Import with the calendar's name.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Lowercase letters, digits, `-` and `_`. Changing it replaces the calendar.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"timezone": schema.StringAttribute{
				Required: true, MarkdownDescription: "The IANA zone its dates are local to, e.g. `Europe/Madrid`.",
			},
			"dates": schema.SetAttribute{
				Optional: true, Computed: true, ElementType: types.StringType,
				Default:             setdefault.StaticValue(types.SetValueMust(types.StringType, []attr.Value{})),
				MarkdownDescription: "Single dates, `YYYY-MM-DD`. Default: none.",
			},
			"ranges": schema.ListNestedAttribute{
				Optional: true, Computed: true,
				Default: listdefault.StaticValue(types.ListValueMust(rangeType, []attr.Value{})),
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"from": schema.StringAttribute{Required: true, MarkdownDescription: "The first date, `YYYY-MM-DD`."},
					"to":   schema.StringAttribute{Required: true, MarkdownDescription: "The last date, included."},
				}},
				MarkdownDescription: "Spans of dates, both ends included. Default: none.",
			},
			"version": schema.Int64Attribute{Computed: true, MarkdownDescription: "Bumped by every change."},
			"etag": schema.StringAttribute{
				Computed: true, MarkdownDescription: "The version as the API's ETag, sent as `If-Match` on every edit.",
			},
			"created_at": schema.StringAttribute{
				Computed: true, MarkdownDescription: "When the calendar was created.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"updated_at": schema.StringAttribute{Computed: true, MarkdownDescription: "When it last changed."},
		},
	}
}

func (r *calendarResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = calendarResourceSchema()
}

func (r *calendarResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.api = clientFrom(req.ProviderData, &resp.Diagnostics)
}

func (m *calendarModel) input(ctx context.Context) (client.CalendarInput, diag.Diagnostics) {
	var diags diag.Diagnostics
	input := client.CalendarInput{Timezone: m.Timezone.ValueString(), Dates: []string{}, Ranges: []client.DateRange{}}
	if !m.Dates.IsNull() && !m.Dates.IsUnknown() {
		diags.Append(m.Dates.ElementsAs(ctx, &input.Dates, false)...)
	}
	if !m.Ranges.IsNull() && !m.Ranges.IsUnknown() {
		var ranges []struct {
			From types.String `tfsdk:"from"`
			To   types.String `tfsdk:"to"`
		}
		diags.Append(m.Ranges.ElementsAs(ctx, &ranges, false)...)
		for _, span := range ranges {
			input.Ranges = append(input.Ranges, client.DateRange{From: span.From.ValueString(), To: span.To.ValueString()})
		}
	}
	return input, diags
}

func calendarFromAPI(ctx context.Context, calendar *client.Calendar) (calendarModel, diag.Diagnostics) {
	var diags diag.Diagnostics
	dates, d := types.SetValueFrom(ctx, types.StringType, nonNilList(calendar.Dates))
	diags.Append(d...)
	spans := make([]attr.Value, 0, len(calendar.Ranges))
	for _, span := range calendar.Ranges {
		value, d := types.ObjectValue(rangeType.AttrTypes, map[string]attr.Value{
			"from": types.StringValue(span.From), "to": types.StringValue(span.To),
		})
		diags.Append(d...)
		spans = append(spans, value)
	}
	ranges, d := types.ListValue(rangeType, spans)
	diags.Append(d...)
	return calendarModel{
		Name:      types.StringValue(calendar.Name),
		Timezone:  types.StringValue(calendar.Timezone),
		Dates:     dates,
		Ranges:    ranges,
		Version:   types.Int64Value(calendar.Version),
		ETag:      types.StringValue(calendar.ETag),
		CreatedAt: types.StringValue(calendar.CreatedAt),
		UpdatedAt: types.StringValue(calendar.UpdatedAt),
	}, diags
}

func (r *calendarResource) write(ctx context.Context, plan calendarModel, etag, action string, diags *diag.Diagnostics, state interface {
	Set(context.Context, any) diag.Diagnostics
}) {
	input, d := plan.input(ctx)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	calendar, err := r.api.PutCalendar(ctx, plan.Name.ValueString(), etag, input)
	if err != nil {
		addAPIError(diags, action, err, schemaFieldNames(calendarResourceSchema().Attributes))
		return
	}
	model, d := calendarFromAPI(ctx, calendar)
	diags.Append(d...)
	diags.Append(state.Set(ctx, &model)...)
}

func (r *calendarResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan calendarModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if !resp.Diagnostics.HasError() {
		r.write(ctx, plan, "", "Creating the calendar", &resp.Diagnostics, &resp.State)
	}
}

func (r *calendarResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state calendarModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	calendar, err := r.api.GetCalendar(ctx, state.Name.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "Reading the calendar", err, nil)
		return
	}
	model, diags := calendarFromAPI(ctx, calendar)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &model)...)
}

func (r *calendarResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state calendarModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if !resp.Diagnostics.HasError() {
		r.write(ctx, plan, state.ETag.ValueString(), "Updating the calendar", &resp.Diagnostics, &resp.State)
	}
}

func (r *calendarResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state calendarModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := r.api.DeleteCalendar(ctx, state.Name.ValueString()); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, "Deleting the calendar", err, nil)
	}
}

func (r *calendarResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	resource.ImportStatePassthroughID(ctx, path.Root("name"), req, resp)
}
