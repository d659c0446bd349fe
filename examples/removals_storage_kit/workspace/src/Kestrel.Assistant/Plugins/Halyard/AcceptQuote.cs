using System.ComponentModel;
using System.Threading.Tasks;
using Microsoft.SemanticKernel;

namespace Kestrel.Assistant.Plugins.Halyard;

public sealed partial class HalyardBookingPlugin
{
    /// <summary>Wraps Halyard BookingService.AcceptQuotation. Does not take payment.</summary>
    [KernelFunction("accept_quote")]
    [Description("Records the customer's acceptance of a quote and holds the move date. Sends the deposit payment link by email; the date is only confirmed when the deposit is paid.")]
    public async Task<string> AcceptQuoteAsync(
        [Description("Quotation number as printed on the quote, e.g. Q-58120.")] string quotationNumber,
        [Description("Requested move date, yyyy-MM-dd.")] string moveDate,
        [Description("Cover level: STANDARD or COVER_PLUS.")] string coverLevel)
    {
        var response = await _bookingService.AcceptQuotationAsync(new AcceptQuotationRequest
        {
            QuotationNumber = quotationNumber,
            MoveDate = moveDate,
            CoverLevel = coverLevel,
        });
        return response.ToAgentText();
    }
}
