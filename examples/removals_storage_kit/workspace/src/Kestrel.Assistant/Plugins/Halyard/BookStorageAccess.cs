using System.ComponentModel;
using System.Threading.Tasks;
using Microsoft.SemanticKernel;

namespace Kestrel.Assistant.Plugins.Halyard;

public sealed partial class HalyardStoragePlugin
{
    /// <summary>Wraps Halyard StorageService.ScheduleAccessVisit.</summary>
    [KernelFunction("book_storage_access")]
    [Description("Books a visit to the Kestrel Park warehouse so the customer can open their stored containers.")]
    public async Task<string> BookStorageAccessAsync(
        [Description("Storage account number, e.g. STA-30912.")] string storageAccount,
        [Description("Visit date, yyyy-MM-dd.")] string visitDate,
        [Description("Number of containers to bring down.")] int containers)
    {
        var response = await _storageService.ScheduleAccessVisitAsync(new ScheduleAccessVisitRequest
        {
            StorageAccount = storageAccount,
            VisitDate = visitDate,
            Containers = containers,
        });
        return response.ToAgentText();
    }
}
