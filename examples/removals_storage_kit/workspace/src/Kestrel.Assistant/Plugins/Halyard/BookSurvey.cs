using System.ComponentModel;
using System.Threading.Tasks;
using Microsoft.SemanticKernel;

namespace Kestrel.Assistant.Plugins.Halyard;

public sealed partial class HalyardBookingPlugin
{
    /// <summary>Wraps Halyard BookingService.CreateSurveyAppointment (SOAP 1.1).</summary>
    [KernelFunction("book_survey")]
    [Description("Books a pre-move survey with a Kestrel surveyor. Check the postcode first: in-home surveys are only offered within range of a depot. Returns the appointment reference.")]
    public async Task<string> BookSurveyAsync(
        [Description("Customer's full UK postcode, e.g. BS8 1TH.")] string postcode,
        [Description("Survey type: VIDEO or IN_HOME.")] string surveyType,
        [Description("Preferred date, yyyy-MM-dd.")] string preferredDate,
        [Description("Halyard enquiry number from the web form, e.g. ENQ-204417.")] string enquiryNumber)
    {
        var request = new CreateSurveyAppointmentRequest
        {
            Postcode = postcode,
            SurveyType = surveyType,
            PreferredDate = preferredDate,
            EnquiryNumber = enquiryNumber,
        };
        var response = await _bookingService.CreateSurveyAppointmentAsync(request);
        return response.ToAgentText();
    }
}
