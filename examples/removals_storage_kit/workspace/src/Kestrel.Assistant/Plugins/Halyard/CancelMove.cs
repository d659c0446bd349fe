using System.ComponentModel;
using System.Threading.Tasks;
using Microsoft.SemanticKernel;

namespace Kestrel.Assistant.Plugins.Halyard;

public sealed partial class HalyardBookingPlugin
{
    /// <summary>Wraps Halyard BookingService.CancelJob. Deposit refunds are calculated by Halyard.</summary>
    [KernelFunction("cancel_move")]
    [Description("Cancels a booked move. Halyard applies the cancellation terms and returns the deposit refund, if any.")]
    public async Task<string> CancelMoveAsync(
        [Description("Halyard job number, e.g. KJ-771042.")] string jobNumber,
        [Description("Reason given by the customer.")] string reason)
    {
        var response = await _bookingService.CancelJobAsync(new CancelJobRequest
        {
            JobNumber = jobNumber,
            Reason = reason,
        });
        return response.ToAgentText();
    }
}
